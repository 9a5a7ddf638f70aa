"""`spyglass run`: the program runs as plain `python` would run it, in a process of its
own, and profiles itself like every Python process it starts; this process waits for it,
merges what the run's processes left into one profile, reports, and leaves with the
program's own exit status.

Running the program in a fresh interpreter rather than inside this one means nothing of
spyglass sits under the program's frames (tracebacks, faulthandler dumps, inspect.stack()
and debuggers see what plain python shows), and a program that crashes or is killed with
SIGKILL still has its profile: its journal is here to be read."""

from __future__ import annotations

import _thread
import os
import sys

from spyglass.runtime import launched
from spyglass.runtime.options import ProfileOptions
from spyglass.runtime.run_environment import (
    BOOTSTRAP_DIR,
    CHILD_CONFIG_ENV,
    SIGINT_BLOCKED_ENV,
    SUPERVISOR_ENV,
)
from spyglass.runtime.target import Target, TargetError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from typing import Any
else:
    # The C half of `signal`: the module itself imports enum, milliseconds before the
    # program can start, for names of the plain numbers used here.
    import _signal as signal

# Signals meant for the program: passed on to it when a process sent them to spyglass.
# When the terminal sent them (Ctrl-C, Ctrl-\\, a resize, a hang-up), it sent them to the
# whole foreground process group, the program included: passing them on would deliver
# them twice.
_PASSED_ON = (
    "SIGINT",
    "SIGTERM",
    "SIGHUP",
    "SIGQUIT",
    "SIGUSR1",
    "SIGUSR2",
    "SIGALRM",
    "SIGWINCH",
    # Signals a program may handle, whose default would end spyglass (and the program
    # with it, unprofiled) or be lost. The launcher blocks the same (launcher/main.cpp).
    "SIGPWR",
    "SIGIO",
    "SIGURG",
    "SIGPROF",
    "SIGVTALRM",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGSYS",
)

# The stops that job control makes (Ctrl-Z, a background read or write on the terminal).
_JOB_CONTROL_STOPS = (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)


def _error(message: str) -> None:
    from spyglass.safe_text import escape_text  # file names in messages are data too

    print(f"spyglass: error: {escape_text(message)}", file=sys.stderr)


def _interpreter_flags() -> list[str]:
    """The options this interpreter was started with (-O, -X dev, -W ...), for the
    program's: read from the command line rather than rebuilt from sys.flags by
    subprocess, whose import costs milliseconds of start-up."""
    from spyglass.runtime.invocation import command_line, interpreter_options

    options = interpreter_options(command_line())
    return [o for o in options if o != "-S"] if launched.site_left_out() else options


def _command(target: Target) -> list[str]:
    what = {"module": ["-m", target.value], "code": ["-c", target.value], "stdin": ["-"]}
    # A script whose name starts with "-" (given as `run -- -x.py`) is no option to python.
    script = ["--", target.value] if target.value.startswith("-") else [target.value]
    return [sys.executable, *_interpreter_flags(), *what.get(target.kind, script)]


# Set when the program has ended: the warm-up imports nothing more, so that it does not
# hold the GIL against the merge and report that now need it.
_program_ended = [False]


def _warm_up(options: ProfileOptions) -> None:
    """Imports what reporting the run will need (the reporters and the profile model, tens
    of milliseconds) while the program runs, instead of after it has ended. (Not at a
    low priority: on a busy machine the report would then wait on a starved import.) The
    thread inherits the blocked signals: they still all come to _wait."""
    modules = [
        "spyglass.runtime.fragments",
        "spyglass.runtime.output",
        "spyglass.profile_model.process_keys",
    ]
    if options.report:
        # With the modules it imports only when drawing some of its parts.
        modules += [
            "spyglass.reporters.terminal",
            "spyglass.reporters.terminal_threads",
        ]
    if options.html is not None:
        modules.append("spyglass.reporters.html")
    # Not the merging of several processes' profiles, which a run of one process (most
    # runs) does without (fragments.finish_run): on a CPU the program needs, importing it
    # for every run would cost more than it saves the others at their end. Nor the
    # extension, which only recovering the profile of a process that was killed needs:
    # loading it costs every run some 4.6 million instructions (a fifteenth of this
    # process), a killed one a millisecond or two later.

    def warm() -> None:
        import importlib

        # The main thread wakes when the program ends, and must not wait the default 5 ms
        # for this one to let go of the GIL: it has the merge and the report to do.
        sys.setswitchinterval(0.0005)

        for name in modules:
            if _program_ended[0]:
                return
            try:
                importlib.import_module(name)
            except Exception:  # reporting says what went wrong, when it runs
                return

    try:
        _thread.start_new_thread(warm, ())
    except RuntimeError:
        pass  # no threads to spare: reporting imports them itself


class Supervisor:
    def __init__(self, target: Target, options: ProfileOptions) -> None:
        self.target = target
        self.options = options
        self._snapshot_failed = False
        self._live: Any = None  # the live view (reporters/live.py) while the program runs

    def run(self) -> int:
        """Runs the program to its end; returns the exit status to leave with (after
        killing this process with the program's fatal signal, if it died of one)."""
        if (sys.flags.no_site and not launched.site_left_out()) or sys.flags.ignore_environment:
            _error("spyglass run needs the site module and the environment (drop -S, -E, -I)")
            return 2
        try:
            self.target.prepare()
        except TargetError as e:
            _error(str(e))
            return e.status
        paths_given = bool(self.options.program_paths)
        if not paths_given:
            self.options.program_paths = self.target.default_program_paths()
        if self.target.pseudo_file is not None:
            self.options.pseudo_files = [self.target.pseudo_file]

        from spyglass.runtime.run_environment import prepare_children

        fragments_dir = prepare_children(self.options, paths_given=paths_given)
        if fragments_dir is None:
            return 2  # run_dirs said why
        # Every signal for the program is taken synchronously (sigwaitinfo tells who sent
        # it), as is the program's own end. SIGCHLD may have been ignored by whoever
        # started spyglass: then waitpid could not see the program's status.
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        watched = {getattr(signal, n) for n in _PASSED_ON if hasattr(signal, n)}
        watched.update(range(signal.SIGRTMIN, signal.SIGRTMAX + 1))  # the program's own
        watched.add(signal.SIGCHLD)
        previous = launched.mask_before(signal.pthread_sigmask(signal.SIG_BLOCK, watched), watched)
        command = _command(self.target) + self.target.args
        program = launched.claim(command, BOOTSTRAP_DIR)
        if program is not None:  # the launcher started it: it waits for the configuration
            pid: int | None = program.adopt(os.environ[CHILD_CONFIG_ENV])
        else:
            try:
                stdin = self._stdin_program(fragments_dir)
            except OSError as e:
                _error(f"cannot pass the program on: {e}")
                pid = None
            else:
                pid = self._start(command, previous, stdin)
        if pid is None:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
            from spyglass.runtime.run_dirs import remove_tree

            remove_tree(fragments_dir)
            return 127
        from spyglass.runtime.run_dirs import remove_stale

        remove_stale(os.path.dirname(fragments_dir))  # while the program starts, not before
        _warm_up(self.options)
        self._start_live_view()
        try:
            code, fatal = self._wait(pid, watched, fragments_dir)
            _program_ended[0] = True
        finally:
            if self._live is not None:
                self._live.stop()  # off the screen before the report
        self._report(fragments_dir, pid, code)
        if fatal is not None:
            self._die_of(fatal)
        # Signals that came while the run was merged were meant for a program that has
        # ended: drop them rather than let them end spyglass with another status.
        while signal.sigtimedwait(watched, 0) is not None:
            pass
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        return code if code is not None else 128 + (fatal or 0)

    def _die_of(self, signum: int) -> None:
        """Dies of the signal the program died of, so callers see the same status."""
        import resource

        try:
            # The program dumped its core if the signal does: ours must not replace it.
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (OSError, ValueError):
            pass
        try:
            signal.signal(signum, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL and SIGSTOP: always their default
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)

    def _sources(self) -> dict[str, list[str]] | None:
        """The source of a program read from stdin, for its lines in the profile."""
        if self.target.kind != "stdin":
            return None
        return {"<stdin>": self.target.source_lines()}

    def _stdin_program(self, fragments_dir: str) -> str | None:
        """For `spyglass run -`, a file holding the program read from stdin: the program's
        interpreter reads it as its stdin, as `python -` does (sys.argv[0] "-", its code
        "<stdin>"), and the program then finds its stdin at its end, as there. Else None."""
        if self.target.kind != "stdin":
            return None
        path = os.path.join(fragments_dir, "program-stdin")
        with open(path, "wb") as f:
            f.write(self.target.source)
        return path

    def _start(self, argv: list[str], child_mask: set[int], stdin: str | None = None) -> int | None:
        """Starts the program (with `child_mask` for its signal mask, and the file `stdin`
        for its standard input if given); returns its pid."""
        # If spyglass is killed, the program goes too: the program's own bootstrap asks for
        # that (children.activate_child), as the extension is not loaded here yet.
        env = dict(os.environ)
        supervisor = os.getpid()
        try:
            pid = os.fork()
        except OSError as e:
            _error(f"cannot start the program: {e.strerror}")
            return None
        if pid == 0:
            try:
                # SIGINT blocked until the program's bootstrap holds it: one passed on
                # before then is a fatal error in site's imports (the launcher does the same).
                env.pop(SIGINT_BLOCKED_ENV, None)
                if signal.SIGINT not in child_mask:
                    child_mask = child_mask | {signal.SIGINT}
                    env[SIGINT_BLOCKED_ENV] = "1"
                signal.pthread_sigmask(signal.SIG_SETMASK, child_mask)
                if stdin is not None:
                    fd = os.open(stdin, os.O_RDONLY)
                    os.dup2(fd, 0)
                    os.close(fd)
                env[SUPERVISOR_ENV] = f"{supervisor}:{os.getpid()}"
                os.execve(argv[0], argv, env)
            except OSError as e:
                _error(f"cannot run {argv[0]}: {e.strerror}")
            os._exit(127)
        return pid

    def _start_live_view(self) -> None:
        if not self.options.live:
            return
        if not sys.stderr.isatty():
            print(
                "spyglass: --live needs stderr to be a terminal: no live view, the report "
                "comes at the end",
                file=sys.stderr,
            )
            return
        launched.ensure_site()  # rich may be in another site directory
        try:
            from spyglass.reporters.live import LiveView

            self._live = LiveView(sys.stderr.fileno(), color=self.options.color is not False)
        except Exception as e:
            print(f"spyglass: no live view: {e}", file=sys.stderr)

    def _wait(
        self, pid: int, watched: set[int], fragments_dir: str
    ) -> tuple[int | None, int | None]:
        """Passes signals on until the program ends (writing snapshots of the profile, and
        redrawing the live view, meanwhile when asked to); returns its exit code or its
        fatal signal."""
        import time

        # Each periodic task: its period and when it is next due.
        every = {"snapshot": self.options.snapshot_every, "live": None}
        if self._live is not None:
            every["live"] = self._live.refresh_s
        due = {name: time.monotonic() + p for name, p in every.items() if p}
        while True:
            if not due:
                info = signal.sigwaitinfo(watched)
            else:
                timeout = max(0.0, min(due.values()) - time.monotonic())
                waited = signal.sigtimedwait(watched, timeout)
                if waited is None:
                    now = time.monotonic()
                    ready = [name for name, at in due.items() if at <= now]
                    self._tick(fragments_dir, pid, ready)
                    for name in ready:
                        due[name] = time.monotonic() + (every[name] or 0.0)
                    continue
                info = waited
            if info.si_signo == signal.SIGWINCH and self._live is not None:
                self._live_resized()
            if info.si_signo != signal.SIGCHLD:
                if info.si_code <= 0:  # sent by a process (kill, raise, sigqueue)
                    try:
                        os.kill(pid, info.si_signo)
                    except ProcessLookupError:
                        pass
                continue
            try:
                done, status = os.waitpid(pid, os.WNOHANG | os.WUNTRACED)
            except ChildProcessError:
                _error("lost track of the program: its exit status is unknown")
                return 1, None
            if done == 0:
                continue
            if os.WIFSTOPPED(status):
                # Job control: the program stopped (Ctrl-Z, or a read from the terminal in
                # the background): so does spyglass, so that the shell sees the job stop;
                # it resumes both with SIGCONT. A SIGSTOP sent to the program alone (a
                # debugger, `kill -STOP`) is not: whoever sent it continues the program
                # only, and spyglass, stopped, would never see it end.
                if os.WSTOPSIG(status) in _JOB_CONTROL_STOPS:
                    os.kill(os.getpid(), signal.SIGSTOP)
                    os.kill(pid, signal.SIGCONT)
                continue
            if os.WIFSIGNALED(status):
                return None, os.WTERMSIG(status)
            return os.WEXITSTATUS(status), None

    def _live_resized(self) -> None:
        try:
            self._live.resized()
        except Exception:
            pass  # the next redraw, or the final report, is what the terminal shows

    def _tick(self, fragments_dir: str, pid: int, ready: list[str]) -> None:
        """The run so far, merged once for the tasks that are due: the snapshot files
        rewritten, the live view redrawn."""
        from spyglass.runtime.fragments import snapshot_run

        merged: dict[str, Any] | None = None
        failure: Exception | None = None
        try:
            merged = snapshot_run(fragments_dir, pid, self.target.program, self._sources())
        except Exception as e:
            failure = e
        if "snapshot" in ready:
            self._snapshot(merged, failure)
        if "live" in ready and merged is not None:
            try:
                self._live.update(merged)
            except Exception:
                pass  # a frame not drawn: the next one, or the final report, will be

    def _snapshot(self, merged: dict[str, Any] | None, failure: Exception | None) -> None:
        """Rewrites the profile with the run so far; says so once if it cannot (the run and
        its final profile go on regardless)."""
        try:
            from spyglass.runtime.output import write_snapshot

            if failure is not None:
                raise failure
            if merged is not None:
                write_snapshot(merged, self.options)
        except Exception as e:
            if not self._snapshot_failed:
                reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
                _error(f"could not write a snapshot of the profile: {reason}")
            self._snapshot_failed = True

    def _report(self, fragments_dir: str, pid: int, code: int | None) -> None:
        from spyglass.runtime.fragments import finish_run
        from spyglass.runtime.output import write_and_report

        try:
            merged = finish_run(fragments_dir, pid, code, self.target.program, self._sources())
        except Exception as e:  # never lose the program's status over its profile
            _error(f"could not merge the run's profile: {e}")
            return
        if merged is None:
            _error("the program ended before it could be profiled: no profile written")
            return
        write_and_report(merged, self.options)
