"""`spyglass run`: profile a target program from start to exit, whatever way it exits, and
leave with the target's own exit status."""

from __future__ import annotations

import atexit
import os
import signal
import sys
import types

from spyglass.runtime.options import ProfileOptions
from spyglass.runtime.process_profiler import (
    ProcessProfiler,
    finish_current,
    flush_stdout,
    watch_sigterm,
)
from spyglass.runtime.target import Target, TargetError

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from typing import Any

_INTERNAL_DIRS = (
    os.path.dirname(os.path.dirname(os.path.realpath(__file__))),
    os.path.dirname(os.__file__) + os.sep + "runpy",
)


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


def _stdout_flushes() -> bool:
    """Flushes stdout as Python does at exit: a closed file is skipped, a failing flush
    makes the exit status 120."""
    out = sys.stdout
    if out is None or getattr(out, "closed", False):
        return True
    try:
        out.flush()
    except OSError:
        return False
    except Exception:
        return True
    return True


class Launcher:
    def __init__(self, target: Target, options: ProfileOptions) -> None:
        self.target = target
        self.options = options
        self.profiler: ProcessProfiler | None = None
        self.status = 0
        self.fatal_signal: int | None = None

    def run(self) -> int:
        """Runs the target under the profiler; returns its exit status. The profile is
        written at interpreter exit, after the program's own atexit handlers, its threads
        and its child processes are done, as the last thing before the process ends."""
        try:
            code = self.target.prepare()
        except TargetError as e:
            _error(str(e))
            return 2 if "can't open" in str(e) or "module" in str(e) else 1
        if not self.options.program_paths:
            self.options.program_paths = self.target.default_program_paths()
        if self.target.kind == "code":
            self.options.pseudo_files = ["<string>"]

        from spyglass.runtime.children import prepare_children

        fragments_dir = prepare_children(self.options)
        self.profiler = ProcessProfiler(
            self.options, program=self.target.program, fragments_dir=fragments_dir, is_root=True
        )
        try:
            self.profiler.start()
        except Exception as e:
            _error(f"cannot start the profiler: {e}")
            return 2
        from spyglass.runtime.output import keep_own_stderr

        keep_own_stderr()
        # Registered before the program runs, so it runs after every handler it registers.
        atexit.register(self._at_exit)
        watch_sigterm()
        try:
            self.target.run(code)
        except SystemExit as e:
            self.status = _exit_status(e)
        except KeyboardInterrupt:
            self._print_exception(*sys.exc_info())
            self.fatal_signal = signal.SIGINT
            self.status = 130
        except BaseException:
            self._print_exception(*sys.exc_info())
            self.status = 1
        return self.status

    def _at_exit(self) -> None:
        if self.fatal_signal is None and self.status == 0 and not _stdout_flushes():
            self.status = 120  # what CPython exits with when it cannot flush stdout
        finish_current(self.status)
        if self.fatal_signal is not None:
            # Die of the same signal, as plain python does, so callers see the same status.
            flush_stdout()
            signal.signal(self.fatal_signal, signal.SIG_DFL)
            os.kill(os.getpid(), self.fatal_signal)

    def _print_exception(self, etype: Any, value: Any, tb: Any) -> None:
        flush_stdout()
        tb = _strip_own_frames(tb)
        if value is not None:
            value.__traceback__ = tb
        try:
            sys.excepthook(etype, value, tb)
        except Exception:
            import traceback

            traceback.print_exception(etype, value, tb)
