"""Profiling one process of a run from start to exit, whatever way it leaves.

Every Python process of a `spyglass run` (the program itself, forked children, and every
interpreter it starts) profiles itself and writes a fragment of the run's profile on its
way out, journaling as it goes so that a process killed without warning still leaves its
work. The supervisor (runtime/supervisor.py) merges them when the program has ended.
"""

from __future__ import annotations

import atexit
import os
import sys

from spyglass.runtime.options import ProfileOptions
from spyglass.runtime.session import Session, note_current_thread

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    import signal
    from typing import Any, NoReturn
else:
    # The C half of `signal`, which imports enum: milliseconds of start-up for every
    # process of a run, for the plain numbers and handlers used here.
    import _signal as signal

# The profiler of this process (after a fork, the child's own), reached by the exit hooks.
_current: ProcessProfiler | None = None
# The interpreter's own, before _hide_sigterm_handler() stands in for them.
_real_signal = signal.signal
_real_getsignal = signal.getsignal


def worker_role() -> str:
    """The role of a pytest-xdist worker ("xdist worker gw0"), or empty. Only a process
    started by execnet's launcher asks: the tests' own child processes inherit the
    variable too."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return f"xdist worker {worker}" if worker else ""


class ProcessProfiler:
    def __init__(
        self,
        options: ProfileOptions,
        *,
        program: str,
        fragments_dir: str,
        role: str = "",
        interpreter: dict[str, list[int]] | None = None,
    ) -> None:
        self.options = options
        self.program = program
        self.fragments_dir = fragments_dir
        # What the process is for when it is not the program's (multiprocessing's own
        # helpers): such a process is listed as what it is, not judged by how it ended.
        self.role = role
        self.ended = ""  # how it ended when that is no failure (a pool's shutdown)
        # A process started by a one-line launcher (execnet's) learns what it is for only
        # once it runs: a pytest-xdist worker is told its id in PYTEST_XDIST_WORKER.
        self.launched = False
        self.multiprocessing_child = False  # started by multiprocessing's own `-c` code
        self.session = Session(options)
        self.interpreter = interpreter  # interpreter.facts(), when the run passed them on
        self._finished = False
        # Unique per program image: a process that execs keeps its pid, and the part
        # before the exec must not be overwritten by the part after it.
        stem = os.path.join(fragments_dir, f"process-{os.getpid()}-{os.urandom(4).hex()}")
        self.fragment_path = stem + ".json"
        self.journal_path = stem + ".journal"
        # The status the process leaves with is known only after every Python exit hook
        # (this fragment's included) has run: the C library's exit() writes it here.
        self.status_path = stem + ".status"

    def _program_now(self) -> str:
        """`-c` code may learn what it runs only as it runs: a spawn or forkserver worker
        takes its parent's script as its sys.argv[0], which names it better than "-c"."""
        if self.program == "-c" and sys.argv and sys.argv[0] not in ("", "-c"):
            return sys.argv[0]
        return self.program

    def _role_now(self) -> str:
        if self.role or not self.launched:
            return self.role
        if not self.multiprocessing_child:
            return worker_role()  # execnet's: pytest-xdist's worker
        # A spawn worker stopped (a pool's shutdown, its tasks all taken by the others)
        # before it learned the script whose tasks it runs: it ran none of the program's.
        # (One that did is the program's, whatever PYTEST_XDIST_WORKER it inherited.)
        return "multiprocessing worker" if self._program_now() == "-c" else ""

    def successor(self, *, role: str = "") -> ProcessProfiler:
        """A profiler for what this process runs next, writing a fragment of its own: a
        forked child's, or the program's again after an exec that failed."""
        return ProcessProfiler(
            self.options,
            program=self.program,
            fragments_dir=self.fragments_dir,
            role=role,
            interpreter=self.interpreter,
        )

    def start(self) -> None:
        global _current
        self.session.start(
            journal_path=self.journal_path, program=self.program, interpreter=self.interpreter
        )
        _current = self
        import spyglass._native as _native

        _native.note_exit_status(self.status_path)
        _install_hooks()
        _stand_in_for_signal()  # the sampling signal stays the sampler's (_rewrap)

    def finish(self, status: int | None, *, at_exit: bool = False) -> None:
        """Stops profiling and writes this process's fragment once, in this process only.
        `at_exit`: the interpreter is leaving normally (atexit), where collecting garbage
        before the leak test runs no finalizer that would not have run anyway; not on
        os._exit (a forked pool worker would run its parent's), an exec or a signal."""
        if self._finished or not self.session.in_original_process:
            return
        self._finished = True
        held = _hold_sigint()
        try:
            self._write_fragment(status, at_exit)
        finally:
            _release_sigint(held)

    def _write_fragment(self, status: int | None, at_exit: bool) -> None:
        try:
            self.session.stop(collect_garbage=at_exit)
            role = self._role_now()
            notes = {k: v for k, v in (("role", role), ("ended", self.ended)) if v}
            data = self.session.profile_json(
                program=self._program_now(), argv=list(sys.argv), exit_status=status, notes=notes
            )
        except Exception as e:
            print(f"spyglass: error: could not build the profile: {e}", file=sys.stderr)
            return  # the journal stays: the run rebuilds this process from it
        from spyglass.outfile import write_output

        try:
            write_output(self.fragment_path, data)
            os.unlink(self.journal_path)  # the fragment replaces it
        except OSError:
            pass  # the run is over and its directory gone: nothing to add to

    def die_of(self, signum: int, status: int) -> NoReturn:
        """Writes the fragment, then dies of `signum` as the process would have."""
        self.finish(status)
        _real_signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(status)  # not reached unless the signal is blocked


class _HeldSigint:
    """SIGINT's handler while a fragment is written, and whether one came meanwhile."""

    def __init__(self, previous: Any) -> None:
        self.previous = previous
        self.came = False

    def __call__(self, signum: int, frame: Any) -> None:
        self.came = True


def _hold_sigint() -> _HeldSigint | None:
    """Holds SIGINT off while the process's fragment is written, on its way out: a
    KeyboardInterrupt raised in the middle printed spyglass's own traceback ("Exception
    ignored in atexit callback") and cut the profile short. A group's SIGINT (`timeout -s
    INT`, `kill -INT -- -PGID`) reaches the program and the supervisor both, and the
    supervisor cannot tell it from one sent to it alone, which it passes on: so a second one
    comes as the program ends of the first. None where it cannot be held (not the main
    thread, or a handler not set from Python, which cannot be put back)."""
    try:
        previous = _real_getsignal(signal.SIGINT)
        if previous is None:
            return None
        held = _HeldSigint(previous)
    except (ValueError, TypeError, OSError):
        return None
    for _ in range(3):
        try:
            # Runs a handler whose signal is pending first, and then changes nothing.
            _real_signal(signal.SIGINT, held)
            return held
        except KeyboardInterrupt:
            held.came = True
        except (ValueError, TypeError, OSError):
            return None
    return None


def _release_sigint(held: _HeldSigint | None) -> None:
    """SIGINT's handler back. One that came meanwhile is dropped, since the process is
    already leaving, unless SIGINT had its default action: then the process dies of it
    now, as it would have then, its fragment written."""
    if held is None:
        return
    try:
        _real_signal(signal.SIGINT, held.previous)
    except (ValueError, TypeError, OSError):
        return
    _rewrap(signal.SIGINT)
    if held.came and held.previous == signal.SIG_DFL:
        os.kill(os.getpid(), signal.SIGINT)


def finish_current(status: int | None) -> None:
    if _current is not None:
        _current.finish(status)


def finish_at_exit() -> None:
    """The atexit callback: the interpreter is leaving normally."""
    if _current is not None:
        _current.finish(None, at_exit=True)


def _on_sigterm(signum: int, frame: Any) -> None:
    # Plain python dies of SIGTERM at once, without unwinding: so does the program here,
    # only after its fragment is written.
    import spyglass._native as _native

    _native.termination_seen()  # no need to send it again (platform/termination.hpp)
    if _current is not None:
        if _current._finished:
            # The process is already on its way out and writing its fragment (a pool
            # terminating a worker that is finishing, say): let it finish and leave.
            return
        if _is_pool_worker():
            # A pool terminates its workers as it shuts down (`with Pool() as p:` does):
            # the way a pool worker ends, not a failure.
            _current.ended = "terminated by its pool"
        elif _current.multiprocessing_child and _not_yet_its_process():
            # Stopped by its parent while it still unpacked what to run (a pool shutting
            # down as a slow worker starts): nothing of the program's failed.
            _current.ended = "terminated as it started"
        _current.die_of(signal.SIGTERM, 128 + signal.SIGTERM)
    _real_signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _is_pool_worker() -> bool:
    process = sys.modules.get("multiprocessing.process")
    if process is None:
        return False
    try:
        return "PoolWorker" in process.current_process().name  # named so by Pool
    except Exception:
        return False


def _not_yet_its_process() -> bool:
    """Whether a process multiprocessing started has yet to become the Process it runs."""
    process = sys.modules.get("multiprocessing.process")
    if process is None:
        return True
    try:
        return bool(process.current_process().name == "MainProcess")
    except Exception:
        return False


def watch_sigterm() -> None:
    """Writes the fragment on SIGTERM, unless the program handles SIGTERM itself."""
    try:
        if _real_getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            _real_signal(signal.SIGTERM, _on_sigterm)
        if _real_getsignal(signal.SIGTERM) is _on_sigterm:
            import spyglass._native as _native

            # One that comes as the main thread blocks in a call the interpreter does not
            # wake would wait for that call forever (a pool's worker, for one).
            _native.watch_termination(signal.SIGTERM)
            _hide_sigterm_handler()
    except ValueError:  # not the main thread
        pass


# The signals whose group copies are matched with the supervisor's (watch_group_signals).
_echoed: tuple[int, ...] = ()


def watch_group_signals(supervisor: int) -> None:
    """In the program `spyglass run` started: a SIGINT sent to the run's process group,
    which the supervisor also gets and passes on, is delivered to the program once
    (platform/forwarded_signals.hpp). The wrapper of the interpreter's handler is put back
    after each `signal.signal` for it, which replaces it."""
    global _echoed
    import spyglass._native as _native

    _native.note_signal_forwarder(supervisor)
    _echoed = (signal.SIGINT,)
    _stand_in_for_signal()
    _rewrap(signal.SIGINT)


def _rewrap(signalnum: int) -> None:
    import spyglass._native as _native

    if signalnum == _native.sample_signal():
        # The sampler's handler back in place, calling the program's for what it sends:
        # else the program's got the sampler's signals and the sampling stopped.
        _native.keep_sample_signal(signalnum)
    if signalnum in _echoed:
        try:
            import spyglass._native as _native

            _native.drop_forwarded_echoes(signalnum)
        except Exception:
            pass  # the signal is delivered as it was sent: twice at worst


def _hide_sigterm_handler() -> None:
    """The program finds SIGTERM's handler as plain python leaves it: the default. Seen,
    spyglass's was called on by handlers that call the one they found if it is callable,
    and ended the process in the middle of its shutdown (status 143 for 0). Setting the
    default back keeps spyglass's, which ends the process as the default does, once its
    profile is written."""
    _stand_in_for_signal()


def _ignore_foreign_sample_signal(signum: int, frame: Any) -> None:
    """What the interpreter holds for the sampling signal where the program set its default
    or ignored it: its copies that are not samples are ignored (as spyglass's handler did
    before), and the signal is never at its default, fatal to whichever thread a timer's
    copy reaches, not even between signal.signal's sigaction and the sampler's return."""


# What the program set for the sampling signal where _ignore_foreign_sample_signal stands in.
_sample_signal_set: list[Any] = []


def _shown(signalnum: int, handler: Any) -> Any:
    """A handler as signal.getsignal shows it to the program."""
    if handler is _on_sigterm:
        return signal.SIG_DFL
    if handler is _ignore_foreign_sample_signal:
        return _sample_signal_set[-1] if _sample_signal_set else signal.SIG_DFL
    return handler


def _getsignal(signalnum: int) -> Any:
    return _shown(signalnum, _real_getsignal(signalnum))


def _set_signal(signalnum: int, handler: Any) -> Any:
    if (
        signalnum == signal.SIGTERM
        and not callable(handler)
        and handler == signal.SIG_DFL
        and _real_getsignal(signalnum) is _on_sigterm
    ):
        return signal.SIG_DFL
    was = _shown(signalnum, _real_getsignal(signalnum))
    wanted = handler
    if not callable(handler) and handler in (signal.SIG_DFL, signal.SIG_IGN):
        import spyglass._native as _native

        if signalnum == _native.sample_signal():
            wanted = _ignore_foreign_sample_signal
    _real_signal(signalnum, wanted)
    if wanted is _ignore_foreign_sample_signal:
        _sample_signal_set[:] = [handler]
    _rewrap(signalnum)  # the interpreter's new handler replaced the echo filter
    return was


_getsignal.__doc__ = _real_getsignal.__doc__
_set_signal.__doc__ = _real_signal.__doc__


def _stand_in_for_signal() -> None:
    """`signal.signal` and `signal.getsignal` (the module's own call these at each call)
    as the program should see them: SIGTERM's handler as plain python leaves it where
    spyglass's is set (_hide_sigterm_handler), and the SIGINT echo filter and the sampling
    signal's handler put back after each change (watch_group_signals, _rewrap). Once,
    whichever asks first (a forked child inherits them)."""
    signal.getsignal = _getsignal
    signal.signal = _set_signal


def _on_fork_child() -> None:
    """A forked child keeps running the program: it profiles itself from here on."""
    global _current
    parent = _current
    _current = None
    if parent is None or parent._finished:
        return
    note_current_thread()
    child = parent.successor()
    try:
        child.start()
    except Exception:
        return
    atexit.register(finish_at_exit)
    watch_sigterm()  # inherited as it was: clear what the parent had pending


def _after_failed_exec() -> None:
    """An exec that failed (no such file, not executable; os.execvp tries each directory of
    PATH in turn) leaves the process running the program: it goes on being profiled, as
    another image of the same process, with a fragment of its own. Profiling stopped for
    the exec and never resumed before: the rest of the run was lost."""
    global _current
    before = _current
    if before is None or not before._finished or not before.session.in_original_process:
        return
    again = before.successor(role=before.role)
    again.launched = before.launched
    again.multiprocessing_child = before.multiprocessing_child
    try:
        again.start()
    except Exception:
        try:
            again.session.stop()
        except Exception:
            pass
        _current = before


def _install_hooks() -> None:
    from spyglass.runtime.run_environment import with_run_environment
    from spyglass.runtime.stdlib_patches import watch_exits

    watch_exits(
        finish_current,
        exec_env=with_run_environment,
        after_fork_child=_on_fork_child,
        after_failed_exec=_after_failed_exec,
    )
