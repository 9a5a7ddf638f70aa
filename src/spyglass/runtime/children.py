"""The run's environment: what makes every Python process of a run (the program's own
included) profile itself with the run's options and leave its fragment
(runtime/fragments.py merges them)."""

from __future__ import annotations

import os
import sys

from spyglass.runtime.options import ProfileOptions

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from typing import Any

# Read by bootstrap/sitecustomize.py in every Python process started with our environment
# (spelled there too: it must not import spyglass unless profiling is on).
CHILD_CONFIG_ENV = "SPYGLASS_CHILD_CONFIG"
CONFIG_MARSHAL_VERSION = 2
_BOOTSTRAP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap")
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def prepare_children(options: ProfileOptions, *, paths_given: bool = True) -> str | None:
    """Creates the run's fragment directory and sets the environment that child Python
    processes inherit; returns the directory, or None (after one line on stderr saying
    why) if it cannot be made. Unless the user named the program's directories
    (`paths_given`), each process adds its own code to them (see `own_code`)."""
    from spyglass.runtime.run_dirs import make_run_dir

    path = make_run_dir()
    if path is None:
        return None
    from spyglass.runtime.interpreter import facts

    config = {
        "fragments_dir": path,
        "python": list(sys.version_info[:2]),
        "spyglass_version": _native_version(),
        "package_parent": _PACKAGE_PARENT,
        # Computed once here for every process of the same Python: dis costs each one
        # milliseconds to import.
        "interpreter": facts(),
        "options": {
            "interval_s": options.interval_s,
            "memory": options.memory,
            "memory_window": options.memory_window,
            "gpu": options.gpu,
            "program_paths": options.program_paths,
            "profile_all": options.profile_all,
            "profile_only": options.profile_only,
            "profile_exclude": options.profile_exclude,
            "pseudo_files": options.pseudo_files,
            "paths_given": paths_given,
        },
    }
    # marshal rather than JSON: every process of the run reads it before the program
    # starts, and json costs each one milliseconds to import while marshal is built in.
    # Format 2 is read by every Python the program may start, Python 2 included.
    import marshal

    config_path = os.path.join(path, "config.marshal")
    with open(config_path, "wb") as f:
        marshal.dump(config, f, CONFIG_MARSHAL_VERSION)
    os.environ[CHILD_CONFIG_ENV] = config_path
    os.environ["PYTHONPATH"] = _with_bootstrap(os.environ.get("PYTHONPATH"))
    return path


def _with_bootstrap(pythonpath: str | None) -> str:
    """PYTHONPATH with the bootstrap directory first (once)."""
    paths = [p for p in (pythonpath or "").split(os.pathsep) if p and p != _BOOTSTRAP_DIR]
    return os.pathsep.join([_BOOTSTRAP_DIR, *paths])


def _native_version() -> str:
    import spyglass._native as _native

    return str(_native.VERSION)


def with_run_environment(env: dict[str, str] | None) -> dict[str, str] | None:
    """An environment given to an exec'd interpreter, with what makes it part of the run
    added back if the program left it out."""
    if env is None or CHILD_CONFIG_ENV not in os.environ:
        return env
    env = dict(env)
    env.setdefault(CHILD_CONFIG_ENV, os.environ[CHILD_CONFIG_ENV])
    env["PYTHONPATH"] = _with_bootstrap(env.get("PYTHONPATH"))
    return env


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
        found = invocation.module_paths(value)
    elif kind == "script":
        found = [os.path.dirname(os.path.abspath(value)), os.path.dirname(os.path.realpath(value))]
    options.program_paths += [p for p in dict.fromkeys(found) if p not in options.program_paths]


def activate_child(config: dict[str, Any]) -> None:
    """Called from the bootstrap sitecustomize, with the run's configuration it read, in
    every Python process of the run: profile this process with the run's options and
    leave a fragment at exit."""
    import atexit

    from spyglass.runtime import process_profiler

    o = config["options"]
    options = ProfileOptions(
        interval_s=o["interval_s"],
        memory=o["memory"],
        memory_window=o["memory_window"],
        gpu=o.get("gpu", True),
        program_paths=o["program_paths"],
        profile_all=o["profile_all"],
        profile_only=o["profile_only"],
        profile_exclude=o["profile_exclude"],
        pseudo_files=o["pseudo_files"],
        report=False,
    )
    from spyglass.runtime import invocation

    kind, value = invocation.this_process()
    own_code(options, kind, value, paths_given=o.get("paths_given", True))
    profiler = process_profiler.ProcessProfiler(
        options,
        program=sys.argv[0] if sys.argv else "python",
        fragments_dir=config["fragments_dir"],
        role=invocation.helper_role(value) if kind == "code" else "",
        interpreter=config.get("interpreter"),
    )
    profiler.start()
    atexit.register(process_profiler.finish_current, None)
    process_profiler.watch_sigterm()
