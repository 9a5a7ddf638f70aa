"""Every change spyglass makes to the standard library, in one place.

- threading: ``Thread._bootstrap_inner`` is wrapped so that each new thread says it
  started (its name, and the sampler registers it) and ends (the sampler takes its last
  sample), so that threads shorter than an interval are profiled whole.
- os: ``os._exit``, ``os.execv`` and ``os.execve`` leave without unwinding or atexit, so
  the process's fragment is written first; an ``execve`` of this Python keeps the run's
  environment, which the program may have left out of the one it gives.
- fork: a forked child starts profiling itself (``os.register_at_fork``).

subprocess is not patched: a Python child finds the run through the environment it
inherits (runtime/run_environment). Each patch is made at most once per process and stays:
``installed()`` says which are in place.
"""

from __future__ import annotations

import os
import sys
import threading

TYPE_CHECKING = False  # typing costs milliseconds of start-up, which every run pays
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

_installed: set[str] = set()


def installed() -> frozenset[str]:
    """The patches in place in this process: "threads", "exits"."""
    return frozenset(_installed)


def watch_threads(started: Callable[[threading.Thread], None], ending: Callable[[], None]) -> None:
    """Calls ``started(thread)`` in each new thread before it runs, and ``ending()`` in it
    after; neither may fail the thread (Thread.start() waits on it)."""
    bootstrap = getattr(threading.Thread, "_bootstrap_inner", None)
    if bootstrap is None or "threads" in _installed:
        return
    _installed.add("threads")

    def _bootstrap_inner(thread: threading.Thread) -> None:
        try:
            started(thread)
        except Exception:
            pass
        try:
            bootstrap(thread)
        finally:
            ending()

    threading.Thread._bootstrap_inner = _bootstrap_inner  # type: ignore[attr-defined]


def _is_python(path: Any) -> bool:
    try:
        return os.path.realpath(os.fsdecode(path)) == os.path.realpath(sys.executable)
    except (TypeError, ValueError):
        return False


def watch_exits(
    finish: Callable[[int | None], None],
    *,
    exec_env: Callable[[dict[str, str] | None], dict[str, str] | None],
    after_fork_child: Callable[[], None],
) -> None:
    """``finish(status)`` before os._exit(status) and before an exec (status None);
    ``exec_env(env)`` gives the environment of an execve of this Python; and
    ``after_fork_child()`` runs in a forked child."""
    if "exits" in _installed:
        return
    _installed.add("exits")
    real_exit = os._exit

    def _exit(status: int) -> NoReturn:
        finish(status)
        real_exit(status)

    os._exit = _exit
    for name in ("execv", "execve"):
        real = getattr(os, name)

        def _exec(*args: Any, _real: Any = real, _name: str = name) -> Any:
            finish(None)
            if _name == "execve" and _is_python(args[0]):
                # The new program image is part of the run too, even with an environment
                # of its own making.
                args = (args[0], args[1], exec_env(args[2]), *args[3:])
            return _real(*args)

        setattr(os, name, _exec)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=after_fork_child)


__all__ = ["installed", "watch_exits", "watch_threads"]
