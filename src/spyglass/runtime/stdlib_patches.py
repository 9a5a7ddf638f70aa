"""Every change spyglass makes to the standard library, in one place.

- threading: ``Thread._bootstrap_inner`` is wrapped so that each new thread says it
  started (its name, and the sampler registers it) and ends (the sampler takes its last
  sample), so that threads shorter than an interval are profiled whole. A program that
  has not imported threading yet is not made to: importing it (and the collections and
  functools it needs) would add milliseconds to every process of a run. The patch is
  then made as the program imports it, by a finder that steps aside once it has.
- _thread: ``start_new_thread`` (and its old name ``start_new``) is replaced by the
  extension's (bindings/thread_entry.cpp), so that a thread started directly, not through
  threading, says when it starts and ends too: libraries' pools and servers start them so.
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

TYPE_CHECKING = False  # typing costs milliseconds of start-up, which every run pays
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any, NoReturn

_installed: set[str] = set()


def installed() -> frozenset[str]:
    """The patches in place in this process: "threads", "exits"."""
    return frozenset(_installed)


def watch_threads(
    started: Callable[[threading.Thread], None],
    ending: Callable[[], None],
    watch_direct: Callable[[], None],
    wrap_bootstrap: Callable[[Any, Any, Any], Any],
) -> None:
    """Calls ``started(thread)`` in each new thread before it runs, and ``ending()`` in it
    after; neither may fail the thread (Thread.start() waits on it). ``watch_direct()``
    replaces _thread.start_new_thread, for threads started without threading;
    ``wrap_bootstrap(started, ending, bootstrap)`` makes the replacement of
    Thread._bootstrap_inner (the extension's, which adds no frame to the thread's stack).
    Threads started before this are not seen."""
    if "threads" in _installed:
        return
    _installed.add("threads")
    watch_direct()

    def patch(module: ModuleType) -> None:
        bootstrap = getattr(module.Thread, "_bootstrap_inner", None)
        if bootstrap is None:
            return
        module.Thread._bootstrap_inner = wrap_bootstrap(started, ending, bootstrap)

    module = sys.modules.get("threading")
    if module is not None:
        patch(module)
    else:
        sys.meta_path.insert(0, _WhenImported("threading", patch))


class _WhenImported:
    """A meta path finder that finds nothing itself: when `name` is imported it asks the
    finders after it for the module, and has `then(module)` run right after the module's
    own code. The module's spec and loader stay the real ones; the finder leaves
    sys.meta_path once the module is loaded."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.then: Callable[[ModuleType], None] | None = then

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name or self.then is None:
            return None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if getattr(loader, "exec_module", None) is None:
            return spec  # an old-style loader: the patch is not made, the import is untouched
        spec.loader = _ThenLoader(loader, self)
        return spec

    def loaded(self, module: ModuleType) -> None:
        if sys.modules.get(self.name) is not module:
            return  # a copy made from the spec by hand (importlib.util): not the import
        then, self.then = self.then, None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        if then is not None:
            then(module)


class _ThenLoader:
    """Stands in for a module's loader while the import machinery creates and runs it."""

    def __init__(self, loader: Any, finder: _WhenImported) -> None:
        self.loader = loader
        self.finder = finder

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # The module's own code already sees its real loader.
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.finder.loaded(module)


def _is_python(path: Any) -> bool:
    try:
        return os.path.realpath(os.fsdecode(path)) == os.path.realpath(sys.executable)
    except (TypeError, ValueError):
        return False


def _may_exec(path: Any) -> bool:
    """False for a path that certainly cannot be executed (missing, not executable); an
    open file descriptor (fexecve) or anything unusual is left to the exec to judge."""
    if isinstance(path, int):
        return True
    try:
        return os.access(path, os.X_OK)
    except (TypeError, ValueError, OSError):
        return True


def watch_exits(
    finish: Callable[[int | None], None],
    *,
    exec_env: Callable[[dict[str, str] | None], dict[str, str] | None],
    after_fork_child: Callable[[], None],
    after_failed_exec: Callable[[], None],
) -> None:
    """``finish(status)`` before os._exit(status) and before an exec (status None);
    ``exec_env(env)`` gives the environment of an execve of this Python;
    ``after_fork_child()`` runs in a forked child; and ``after_failed_exec()`` when an exec
    raised, the process going on as it was."""
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
            if args and not _may_exec(args[0]):
                # It fails as it would, and the profile goes on (os.execvp tries every
                # directory of PATH in turn).
                return _real(*args)
            finish(None)
            try:
                if _name == "execve" and _is_python(args[0]):
                    # The new program image is part of the run too, even with an
                    # environment of its own making.
                    args = (args[0], args[1], exec_env(args[2]), *args[3:])
                return _real(*args)
            except BaseException:
                after_failed_exec()
                raise

        setattr(os, name, _exec)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=after_fork_child)


__all__ = ["installed", "watch_exits", "watch_threads"]
