"""The run's environment: what makes every Python process of a run (the program's own
included) profile itself with the run's options and leave its fragment (runtime/
fragments.py merges them). The parent writes the run's configuration and points children
at it here; each child reads it in bootstrap/sitecustomize.py and starts profiling in
runtime/children.py."""

from __future__ import annotations

import os
import sys

from spyglass._constants import VERSION
from spyglass.runtime.options import ProfileOptions

# Read by bootstrap/sitecustomize.py in every Python process started with our environment
# (spelled there too: it must not import spyglass unless profiling is on).
CHILD_CONFIG_ENV = "SPYGLASS_CHILD_CONFIG"
# "SUPERVISOR_PID:PROGRAM_PID", set for the program `spyglass run` starts, for it to die
# with the supervisor (children.die_with_supervisor); the program's children do not see it.
SUPERVISOR_ENV = "SPYGLASS_SUPERVISOR"
# Set when the program starts with SIGINT blocked, for its bootstrap to unblock once it
# holds SIGINT (bootstrap/sitecustomize.py; the launcher sets it too).
SIGINT_BLOCKED_ENV = "SPYGLASS_SIGINT_BLOCKED"
CONFIG_MARSHAL_VERSION = 2
BOOTSTRAP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap")
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def prepare_children(options: ProfileOptions, *, paths_given: bool = True) -> str | None:
    """Creates the run's fragment directory and sets the environment that child Python
    processes inherit; returns the directory, or None (after one line on stderr saying
    why) if it cannot be made. Unless the user named the program's directories
    (`paths_given`), each process adds its own code to them (children.own_code)."""
    from spyglass.runtime.run_dirs import make_run_dir

    path = make_run_dir()
    if path is None:
        return None
    from spyglass.runtime.interpreter import facts

    config = {
        "fragments_dir": path,
        "python": list(sys.version_info[:2]),
        "spyglass_version": VERSION,
        "package_parent": _PACKAGE_PARENT,
        # Computed once here for every process of the same Python: dis costs each one
        # milliseconds to import.
        "interpreter": facts(),
        "options": options.to_json(),
        "paths_given": paths_given,
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
    """PYTHONPATH with the bootstrap directory first (once). Its empty entries stay: each is
    the current directory to Python (`PYTHONPATH=$PYTHONPATH:/x` makes one)."""
    if not pythonpath:
        return BOOTSTRAP_DIR  # an empty PYTHONPATH is none, to Python
    paths = [p for p in pythonpath.split(os.pathsep) if p != BOOTSTRAP_DIR]
    return os.pathsep.join([BOOTSTRAP_DIR, *paths])


def with_run_environment(env: dict[str, str] | None) -> dict[str, str] | None:
    """An environment given to an exec'd interpreter, with what makes it part of the run
    added back if the program left it out."""
    if env is None or CHILD_CONFIG_ENV not in os.environ:
        return env
    env = dict(env)
    env.setdefault(CHILD_CONFIG_ENV, os.environ[CHILD_CONFIG_ENV])
    env["PYTHONPATH"] = _with_bootstrap(env.get("PYTHONPATH"))
    return env
