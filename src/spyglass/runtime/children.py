"""A child process of a run: it profiles itself with the run's options (which
bootstrap/sitecustomize.py read from the run's configuration, see run_environment) and
leaves a fragment at exit."""

from __future__ import annotations

import os
import sys

from spyglass.runtime.options import ProfileOptions

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from typing import Any


def own_code(options: ProfileOptions, kind: str, value: str, *, paths_given: bool) -> None:
    """Adds the code this process was started to run to the user's code, as the run does
    for the program itself: `-c` code, and unless the user named the program's directories,
    a script's directory or the package of a `-m` module. A Python child started by the
    program runs code of its own that is as much the user's as the program's."""
    from spyglass.runtime import invocation

    if kind == "code" and invocation.is_launcher_code(value):
        # A launcher's line is not the user's code, even in a run of `-c` code: nor is
        # what it execs, which is "<string>" too.
        options.pseudo_files = [p for p in options.pseudo_files if p != "<string>"]
    elif kind == "code" and "<string>" not in options.pseudo_files:
        options.pseudo_files.append("<string>")
    if paths_given:
        return
    found: list[str] = []
    if kind == "module":
        # While site runs, sys.argv is ["-m", args...]: runpy names the module later.
        found = invocation.module_program_paths(value, sys.argv[1:])
    elif kind == "script":
        found = [os.path.dirname(os.path.abspath(value)), os.path.dirname(os.path.realpath(value))]
    options.program_paths += [p for p in dict.fromkeys(found) if p not in options.program_paths]


def die_with_supervisor() -> None:
    """In the program `spyglass run` started: if the supervisor is killed (SIGKILL), the
    program goes too rather than run on unwatched. Asked for here rather than between the
    supervisor's fork and exec, where the extension is not loaded yet; a supervisor that
    died in between has left the program with another parent."""
    from spyglass.runtime.run_environment import SUPERVISOR_ENV

    supervisor, _, program = os.environ.pop(SUPERVISOR_ENV, "").partition(":")
    if program != str(os.getpid()):
        return  # not the program (the variable came by another way)
    import spyglass._native as _native

    _native.die_with_parent()
    if str(os.getppid()) != supervisor:  # checked after asking: it may have died meanwhile
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
    from spyglass.runtime import process_profiler

    process_profiler.watch_group_signals(int(supervisor))


def activate_child(config: dict[str, Any]) -> None:
    """Called from the bootstrap sitecustomize, with the run's configuration it read, in
    every Python process of the run: profile this process with the run's options and
    leave a fragment at exit."""
    import atexit

    die_with_supervisor()
    from spyglass.runtime import process_profiler

    options = ProfileOptions.from_json(config["options"], report=False)
    from spyglass.runtime import invocation

    kind, value = invocation.this_process()
    own_code(options, kind, value, paths_given=config.get("paths_given", True))
    profiler = process_profiler.ProcessProfiler(
        options,
        program=sys.argv[0] if sys.argv else "python",
        fragments_dir=config["fragments_dir"],
        role=invocation.helper_role(value) if kind == "code" else "",
        interpreter=config.get("interpreter"),
    )
    profiler.launched = kind == "code" and invocation.is_launcher_code(value)
    profiler.multiprocessing_child = kind == "code" and invocation.is_multiprocessing_code(value)
    profiler.start()
    atexit.register(process_profiler.finish_at_exit)
    process_profiler.watch_sigterm()
