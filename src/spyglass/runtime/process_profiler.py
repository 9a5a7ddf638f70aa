"""Profiling one process from start to exit, whatever way it leaves.

The root process of `spyglass run` writes the profile (merging the fragments its child
processes wrote); every Python process the program starts, by fork or by running an
interpreter, profiles itself the same way and writes a fragment on its way out.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys

from spyglass.runtime.options import ProfileOptions
from spyglass.runtime.session import Session

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from typing import Any, NoReturn

# The profiler of this process (after a fork, the child's own), reached by the exit hooks.
_current: ProcessProfiler | None = None
_hooks_installed = False


def current() -> ProcessProfiler | None:
    return _current


def flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except Exception:  # the program may have closed or replaced stdout
        pass


class ProcessProfiler:
    def __init__(
        self,
        options: ProfileOptions,
        *,
        program: str,
        fragments_dir: str | None,
        is_root: bool,
    ) -> None:
        self.options = options
        self.program = program
        self.fragments_dir = fragments_dir
        self.is_root = is_root
        self.session = Session(options)
        self._finished = False
        # Unique per program image: a child that execs keeps its pid, and the part before
        # the exec must not be overwritten by the part after it.
        self._stem = f"process-{os.getpid()}-{os.urandom(4).hex()}"

    def fragment_path(self) -> str | None:
        if self.is_root or self.fragments_dir is None:
            return None
        return os.path.join(self.fragments_dir, self._stem + ".json")

    def journal_path(self) -> str | None:
        path = self.fragment_path()
        return path[: -len(".json")] + ".journal" if path is not None else None

    def start(self) -> None:
        global _current
        # A child journals its run as it goes: killed without warning, it still leaves all
        # but its last sampling interval of work.
        self.session.start(journal_path=self.journal_path() or "", program=self.program)
        _current = self
        _install_hooks()

    def finish(self, status: int | None, *, flush_stdout: bool = True) -> None:
        """Stops profiling and writes the result once, in this process only."""
        if self._finished or not self.session.in_original_process:
            return
        self._finished = True
        try:
            self.session.stop()
            data = self.session.profile_json(
                program=self.program, argv=list(sys.argv), exit_status=status
            )
        except Exception as e:
            print(f"spyglass: error: could not build the profile: {e}", file=sys.stderr)
            return
        from spyglass.runtime.output import write_text_atomically

        if not self.is_root:
            path = self.fragment_path()
            journal = self.journal_path()
            if path is not None and journal is not None:
                try:
                    write_text_atomically(path, data)
                    os.unlink(journal)  # the profile replaces it
                except OSError:
                    pass  # the run is over and its directory gone: nothing to add to
            return
        from spyglass.runtime.output import write_and_report

        if self.fragments_dir is not None:
            from spyglass.runtime.children import merge_fragments

            data = merge_fragments(data, self.fragments_dir)
        write_and_report(data, self.options, flush_stdout=flush_stdout)

    def hand_over(self, exec_args: tuple[Any, ...], *, with_env: bool) -> tuple[Any, ...]:
        """Before this root process execs the same interpreter: leaves this part of the run
        as a fragment and tells the next program image to finish the run as its root.
        Returns the exec arguments to use (with the environment that says so)."""
        if self._finished or self.fragments_dir is None:
            finish_current(None, flush_stdout=False)
            return exec_args
        from spyglass.runtime.children import CHILD_CONFIG_ENV, write_handover

        self.is_root = False  # from here on this image is one process of the run among others
        self.finish(None, flush_stdout=False)
        config = write_handover(self.fragments_dir, self.options)
        if not with_env:
            os.environ[CHILD_CONFIG_ENV] = config
            return exec_args
        env = dict(exec_args[2])
        env[CHILD_CONFIG_ENV] = config
        env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
        return (exec_args[0], exec_args[1], env, *exec_args[3:])

    def die_of(self, signum: int, status: int) -> NoReturn:
        """Writes the profile, then dies of `signum` as the process would have."""
        self.finish(status, flush_stdout=False)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(status)  # not reached unless the signal is blocked


def _is_this_python(path: Any) -> bool:
    try:
        return os.path.realpath(os.fsdecode(path)) == os.path.realpath(sys.executable)
    except (TypeError, ValueError):
        return False


def finish_current(status: int | None, *, flush_stdout: bool = True) -> None:
    if _current is not None:
        _current.finish(status, flush_stdout=flush_stdout)


def _on_sigterm(signum: int, frame: Any) -> None:
    # Plain python dies of SIGTERM at once, without unwinding: so does the program here,
    # only after its profile is written.
    if _current is not None:
        if _current._finished:
            # The process is already on its way out and writing its profile (a pool
            # terminating a worker that is finishing, say): let it finish and leave.
            return
        _current.die_of(signal.SIGTERM, 128 + signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def watch_sigterm() -> None:
    """Writes the profile on SIGTERM, unless the program handles SIGTERM itself."""
    try:
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread
        pass


def _on_fork_child() -> None:
    """A forked child keeps running the program: it profiles itself from here on."""
    global _current
    parent = _current
    _current = None
    if parent is None or parent.fragments_dir is None or parent._finished:
        return
    child = ProcessProfiler(
        parent.options, program=parent.program, fragments_dir=parent.fragments_dir, is_root=False
    )
    try:
        child.start()
    except Exception:
        return
    atexit.register(finish_current, None)


def _install_hooks() -> None:
    """os._exit and os.exec* leave without unwinding or atexit: write the profile first."""
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    real_exit = os._exit

    def _exit(status: int) -> NoReturn:
        finish_current(status, flush_stdout=False)  # os._exit loses buffered output
        real_exit(status)

    os._exit = _exit
    for name in ("execv", "execve"):
        real = getattr(os, name)

        def _exec(*args: Any, _real: Any = real, _name: str = name) -> Any:
            profiler = _current
            if profiler is not None and profiler.is_root and _is_this_python(args[0]):
                # The same interpreter takes the process over: it carries the run on and
                # writes the profile when it ends, this part of the run included.
                args = profiler.hand_over(args, with_env=_name == "execve")
            else:
                finish_current(None, flush_stdout=False)  # exec loses buffered output
            return _real(*args)

        setattr(os, name, _exec)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_on_fork_child)
