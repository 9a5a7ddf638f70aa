"""`spyglass run`: profile a target program from start to exit, whatever way it exits, and
leave with the target's own exit status."""

from __future__ import annotations

import os
import signal
import sys
import types

from spyglass.runtime.options import ProfileOptions
from spyglass.runtime.session import Session
from spyglass.runtime.target import Target, TargetError

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

_INTERNAL_DIRS = (
    os.path.dirname(os.path.dirname(os.path.realpath(__file__))),
    os.path.dirname(os.__file__) + os.sep + "runpy",
)


class _Terminated(BaseException):
    """Raised in the main thread on SIGTERM so the target unwinds and the profile is written."""


def _error(message: str) -> None:
    print(f"spyglass: error: {message}", file=sys.stderr)


def _exit_status(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF  # what the OS keeps of it, as for plain python
    print(code, file=sys.stderr)  # what Python itself does with sys.exit("message")
    return 1


def _strip_own_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """Drops spyglass's and runpy's frames from the top of a traceback, as plain python
    would show it."""
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not (filename.startswith(_INTERNAL_DIRS[0]) or filename.endswith("runpy.py")):
            break
        tb = tb.tb_next
    return tb


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except Exception:  # the target may have closed or replaced stdout
        pass


def _join_non_daemon_threads() -> None:
    """The program is not over until its non-daemon threads are: Python waits for them at
    exit, and so must the profile."""
    import threading

    for t in threading.enumerate():
        if t is not threading.current_thread() and not t.daemon and t.is_alive():
            t.join()


class Launcher:
    def __init__(self, target: Target, options: ProfileOptions) -> None:
        self.target = target
        self.options = options
        self.session: Session | None = None
        self._finished = False
        self._real_exit: Callable[[int], NoReturn] = os._exit

    def run(self) -> int:
        outfile = self.options.outfile
        assert outfile is not None
        try:
            code = self.target.prepare()
        except TargetError as e:
            _error(str(e))
            return 2 if "can't open" in str(e) or "module" in str(e) else 1
        if not self.options.program_paths:
            self.options.program_paths = self.target.default_program_paths()
        if self.target.kind == "code":
            self.options.pseudo_files = ["<string>"]

        self.session = Session(self.options)
        previous_term = signal.getsignal(signal.SIGTERM)
        if previous_term in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, self._on_sigterm)
        self._install_exit_hooks()
        status = 0
        fatal_signal: int | None = None
        try:
            self.session.start()
        except Exception as e:
            _error(f"cannot start the profiler: {e}")
            return 2
        try:
            try:
                self.target.run(code)
            finally:
                if not isinstance(sys.exc_info()[1], _Terminated):
                    _join_non_daemon_threads()
        except SystemExit as e:
            status = _exit_status(e)
        except KeyboardInterrupt:
            self._print_exception(*sys.exc_info())
            fatal_signal = signal.SIGINT
            status = 130
        except _Terminated:
            fatal_signal = signal.SIGTERM
            status = 128 + signal.SIGTERM
        except BaseException:
            self._print_exception(*sys.exc_info())
            status = 1
        finally:
            # Python flushes stdout when it exits normally or by KeyboardInterrupt, never
            # when SIGTERM kills it: what it would lose, we must lose too.
            self.finish(status, flush_stdout=fatal_signal != signal.SIGTERM)
        if fatal_signal is not None:
            # Die of the same signal, as plain python does, so callers see the same status.
            if fatal_signal == signal.SIGINT:
                _flush_stdout()
            signal.signal(fatal_signal, signal.SIG_DFL)
            os.kill(os.getpid(), fatal_signal)
        return status

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        raise _Terminated()

    def _print_exception(self, etype: Any, value: Any, tb: Any) -> None:
        _flush_stdout()
        tb = _strip_own_frames(tb)
        if value is not None:
            value.__traceback__ = tb
        try:
            sys.excepthook(etype, value, tb)
        except Exception:
            import traceback

            traceback.print_exception(etype, value, tb)

    def _install_exit_hooks(self) -> None:
        """os._exit and os.exec* leave without unwinding: write the profile first."""
        launcher = self
        real_exit = os._exit
        self._real_exit = real_exit

        def _exit(status: int) -> NoReturn:
            launcher.finish(status, flush_stdout=False)  # os._exit loses buffered output
            real_exit(status)

        os._exit = _exit
        for name in ("execv", "execve"):
            real = getattr(os, name)

            def _exec(*args: Any, _real: Any = real) -> Any:
                launcher.finish(None, flush_stdout=False)  # so does exec
                return _real(*args)

            setattr(os, name, _exec)

    def finish(self, status: int | None, *, flush_stdout: bool = True) -> None:
        """Stops profiling and writes the profile once, in the original process only."""
        session = self.session
        if self._finished or session is None or not session.in_original_process:
            return
        self._finished = True
        try:
            session.stop()
            data = session.profile_json(
                program=self.target.program, argv=list(sys.argv), exit_status=status
            )
        except Exception as e:
            _error(f"could not build the profile: {e}")
            return
        from spyglass.runtime.output import write_and_report

        write_and_report(data, self.options, flush_stdout=flush_stdout)
