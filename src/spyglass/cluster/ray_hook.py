"""What spyglass.ray gives Ray to send *by value*: the worker setup hook, which Ray runs
first in every worker process of the job, and the collector actor's class.

By value, so that a worker whose environment cannot import spyglass (another virtual
environment, another host) still runs it: there it tells the collector why the worker is
not profiled, and the job goes on. A hook Ray pickled by reference would fail to load
there, and with it the worker; and a worker that cannot load the collector's class gets
a handle whose methods take no arguments. The job's own hook, if it had one, runs first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_SOURCE = """
import os
import threading
import time


def key():
    return "%d@%s" % (os.getpid(), os.uname().nodename)


def task_started():
    # Whether this worker has begun its first task. Ray sets a worker's runtime environment
    # when that task starts, and an actor call made before then aborts the whole worker
    # (Ray's runtime-env cache checks for a value that is still null: seen with Ray 2.60 on
    # an actor whose process was still waiting for its creation task). An actor knows its
    # id from then on; a task worker's function table fills when it runs its first task.
    import ray

    try:
        if ray.get_runtime_context().get_actor_id():
            return True
    except Exception:
        pass
    try:
        from ray._private.worker import global_worker

        functions = global_worker.function_actor_manager
    except Exception:
        return True  # a Ray that keeps these elsewhere: nothing this can wait for
    names = ("_num_task_executions", "_function_execution_info")
    marks = [getattr(functions, name, None) for name in names]
    if all(mark is None for mark in marks):
        return True
    return any(bool(mark) for mark in marks)


def wait_for_first_task(poll_s=0.05):
    while not task_started():
        time.sleep(poll_s)


class Collector:
    # What the job's workers send. A threaded actor: the driver's calls are not queued
    # behind a worker's.

    def __init__(self, job):
        # This process is one of the job's workers too (the hook ran in it): it serves
        # the profiling, so its own profile is dropped.
        try:
            from spyglass.cluster import worker_side

            worker_side.discard(job)
        except Exception:
            pass  # spyglass is not importable here: nothing was started
        self.me = key()
        self.is_over = threading.Event()
        self.lock = threading.Lock()
        self.known = {}
        self.snapshots = {}
        self.finals = {}

    def hello(self, key, who):
        if key != self.me:
            with self.lock:
                self.known[key] = who

    def snapshot(self, key, payload):
        if key != self.me:
            with self.lock:
                self.snapshots[key] = payload

    def final(self, key, result):
        if key != self.me:
            with self.lock:
                self.finals[key] = result

    def ended(self):
        return self.is_over.is_set()

    def end(self):
        self.is_over.set()

    def pending(self):
        # The workers known to the end that have not sent their whole profile.
        with self.lock:
            return {k: v for k, v in self.known.items() if k not in self.finals}

    def state(self):
        with self.lock:
            return dict(self.known), dict(self.snapshots), dict(self.finals)


def make_hook(user_hook, actor, namespace):
    def spyglass_worker_setup():
        hook = user_hook
        if hook is not None:
            if isinstance(hook, str):
                import importlib

                module, _, name = hook.rpartition(".")
                hook = getattr(importlib.import_module(module), name)
            hook()
        try:
            from spyglass.ray import _setup_worker
        except Exception as error:  # spyglass is not importable in this worker
            reason = "spyglass is not importable there (%s: %s)" % (type(error).__name__, error)
        else:
            try:
                _setup_worker()
                return
            except Exception as error:  # a worker that cannot profile still runs the job
                reason = "spyglass could not start (%s: %s)" % (type(error).__name__, error)

        def tell():
            import ray

            wait_for_first_task()
            for _ in range(600):
                try:
                    collector = ray.get_actor(actor, namespace=namespace)
                    break
                except Exception:
                    time.sleep(0.2)
            else:
                return
            host, pid = os.uname().nodename, os.getpid()
            note = {"host": host, "worker": "worker %d" % pid, "pid": pid, "not_profiled": reason}
            collector.hello.remote(key(), note)
            collector.final.remote(key(), note)

        threading.Thread(target=tell, name="spyglass-ray", daemon=True).start()

    return spyglass_worker_setup
"""

_scope: dict[str, Any] = {}


def _by_value() -> dict[str, Any]:
    if not _scope:
        # Not a module anyone can import: cloudpickle sends these themselves, not names.
        _scope["__name__"] = "spyglass-ray-by-value"
        exec(compile(_SOURCE, "<spyglass.ray, sent by value>", "exec"), _scope)
    return _scope


def collector_class() -> type:
    """The collector actor's class (Ray wraps it in ray.remote)."""
    cls = _by_value()["Collector"]
    assert isinstance(cls, type)
    return cls


def make_setup_hook(
    user_hook: str | Callable[[], None] | None, actor: str, namespace: str
) -> Callable[[], None]:
    """The hook for a job whose collector actor is `actor` in `namespace`; `user_hook` is
    the job's own (a callable, or "module.function" as Ray takes it), or None."""
    hook = _by_value()["make_hook"](user_hook, actor, namespace)
    assert callable(hook)
    return hook  # type: ignore[no-any-return]


def task_started() -> bool:
    """Whether this Ray worker has begun a task (see the source sent by value)."""
    return bool(_by_value()["task_started"]())


def wait_for_first_task() -> None:
    """Returns once this Ray worker has begun a task: before then, an actor call from it
    aborts the worker (see `task_started` in the source sent by value)."""
    _by_value()["wait_for_first_task"]()
