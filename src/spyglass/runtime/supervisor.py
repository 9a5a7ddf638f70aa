"""`spyglass run`: the program runs as plain `python` would run it, in a process of its
own, and profiles itself like every Python process it starts; this process waits for it,
merges what the run's processes left into one profile, reports, and leaves with the
program's own exit status.

Running the program in a fresh interpreter rather than inside this one means nothing of
spyglass sits under the program's frames (tracebacks, faulthandler dumps, inspect.stack()
and debuggers see what plain python shows), and a program that crashes or is killed with
SIGKILL still has its profile: its journal is here to be read."""

from __future__ import annotations

import os
import signal
import sys

from spyglass.runtime.options import ProfileOptions
from spyglass.runtime.target import Target, TargetError

# Signals meant for the program: passed on to it. SIGINT is not: a Ctrl-C reaches the
# program from the terminal already, and this process only waits for it to end.
_FORWARDED = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGWINCH")


def _error(message: str) -> None:
    print(f"spyglass: error: {message}", file=sys.stderr)


def _interpreter_flags() -> list[str]:
    """This interpreter's own options (-O, -X dev, -W ...), for the program's."""
    import subprocess

    flags = getattr(subprocess, "_args_from_interpreter_flags", None)
    return list(flags()) if flags is not None else []


def _command(target: Target) -> list[str]:
    what = {"module": ["-m", target.value], "code": ["-c", target.value]}
    return [sys.executable, *_interpreter_flags(), *what.get(target.kind, [target.value])]


class Supervisor:
    def __init__(self, target: Target, options: ProfileOptions) -> None:
        self.target = target
        self.options = options

    def run(self) -> int:
        """Runs the program to its end; returns the exit status to leave with (after
        killing this process with the program's fatal signal, if it died of one)."""
        if sys.flags.no_site or sys.flags.ignore_environment:
            _error("spyglass run needs the site module and the environment (drop -S, -E, -I)")
            return 2
        try:
            self.target.prepare()
        except TargetError as e:
            _error(str(e))
            return 2 if "can't open" in str(e) or "module" in str(e) else 1
        if not self.options.program_paths:
            self.options.program_paths = self.target.default_program_paths()
        if self.target.kind == "code":
            self.options.pseudo_files = ["<string>"]

        from spyglass.runtime.children import prepare_children

        fragments_dir = prepare_children(self.options)
        if fragments_dir is None:
            _error("cannot create a directory for the run's profile under $TMPDIR or /tmp")
            return 2
        status = self._run_and_wait(_command(self.target) + self.target.args)
        if status is None:
            import shutil

            shutil.rmtree(fragments_dir, ignore_errors=True)
            return 127
        pid, code, fatal = status
        self._report(fragments_dir, pid, code)
        if fatal is not None:
            # Die of the same signal, as the program did, so callers see the same status.
            try:
                signal.signal(fatal, signal.SIG_DFL)
            except (OSError, ValueError):
                pass  # SIGKILL and SIGSTOP: always their default
            os.kill(os.getpid(), fatal)
        return code if code is not None else 128 + (fatal or 0)

    def _run_and_wait(self, argv: list[str]) -> tuple[int, int | None, int | None] | None:
        """Starts the program; returns its pid, and its exit code or fatal signal."""
        import spyglass._native as _native

        try:
            pid = os.fork()
        except OSError as e:
            _error(f"cannot start the program: {e.strerror}")
            return None
        if pid == 0:
            try:
                _native.die_with_parent()  # if spyglass is killed, the program goes too
                os.execv(argv[0], argv)
            except OSError as e:
                _error(f"cannot run {argv[0]}: {e.strerror}")
            os._exit(127)
        self._forward_signals(pid)
        while True:
            try:
                _, wait_status = os.waitpid(pid, 0)
                break
            except ChildProcessError:
                return pid, 0, None
        if os.WIFSIGNALED(wait_status):
            return pid, None, os.WTERMSIG(wait_status)
        return pid, os.WEXITSTATUS(wait_status), None

    def _forward_signals(self, pid: int) -> None:
        def forward(signum: int, frame: object) -> None:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for name in _FORWARDED:
            signum = getattr(signal, name, None)
            if signum is not None:
                signal.signal(signum, forward)

    def _report(self, fragments_dir: str, pid: int, code: int | None) -> None:
        import json

        from spyglass.runtime.fragments import merge_run
        from spyglass.runtime.output import write_and_report

        try:
            merged = merge_run(fragments_dir, pid, code, self.target.program)
        except Exception as e:  # never lose the program's status over its profile
            _error(f"could not merge the run's profile: {e}")
            return
        if merged is None:
            _error("the program ended before it could be profiled: no profile written")
            return
        write_and_report(json.dumps(merged), self.options)
