"""Profiles of cluster jobs: merging profiles of several hosts (the host kept, a library's
files under different prefixes made one), and the task table read off the stacks."""

from __future__ import annotations

import ast
import copy
import os
import subprocess
import sys
from typing import Any

import pytest

from helpers import assert_valid_profile
from spyglass.profile_model.io import TIME_KEYS, check_consistency
from spyglass.profile_model.merging import merge_profiles
from spyglass.profile_model.module_paths import module_key
from spyglass.profile_model.renames import rename_file
from spyglass.profile_model.task_types import (
    DASK_RUNNERS,
    NATIVE_TASK,
    OUTSIDE,
    RAY_RUNNERS,
    by_task,
    task_rows,
)


def test_module_keys() -> None:
    a = "/srv/a/.venv/lib/python3.11/site-packages/pandas/core/frame.py"
    b = "/home/u/env/lib/python3.11/site-packages/pandas/core/frame.py"
    assert module_key(a) == module_key(b) == "site-packages/pandas/core/frame.py"
    assert module_key("/usr/lib/python3/dist-packages/pandas/core/frame.py") == module_key(a)
    assert module_key("/usr/lib/python3.11/json/decoder.py") == "python3.11/json/decoder.py"
    assert module_key("/opt/py/lib/python3.12/json/decoder.py") == "python3.12/json/decoder.py"
    assert module_key("/home/u/project/app.py") is None


def _on_host(profile: dict[str, Any], host: str, prefix: str) -> dict[str, Any]:
    """`profile` as if run on `host` with its first file installed under `prefix`."""
    other = copy.deepcopy(profile)
    first = next(iter(other["files"]))
    rename_file(other, first, f"{prefix}/lib/python3.11/site-packages/pkg/mod.py")
    other["host"] = host
    return other


def test_merging_hosts_keeps_them_and_unites_library_files(multifile: dict[str, Any]) -> None:
    a = _on_host(multifile, "node-a", "/srv/venv-a")
    b = _on_host(multifile, "node-b", "/home/u/.venv")
    original_b = copy.deepcopy(b)
    merged = merge_profiles([a, b], ["a", "b"])
    assert b == original_b  # the inputs are not changed
    assert_valid_profile(merged)
    assert check_consistency(merged) == []
    path = "/srv/venv-a/lib/python3.11/site-packages/pkg/mod.py"
    assert list(merged["files"]) == list(a["files"])  # one file, named as the first input
    for key in TIME_KEYS:
        assert merged["files"][path][key] == pytest.approx(2 * a["files"][path][key])
    assert not any(f["file"].startswith("/home/u/.venv") for f in merged["frames"])
    assert [s["host"] for s in merged["sources"]] == ["node-a", "node-b"]
    assert merged["host"] == "node-a, node-b"


RUNNER = "/env/lib/python3.11/site-packages/dask/_task_spec.py"
APP = "/app/job.py"


def _stack(frames: list[int], cpu: float, alloc: float = 0.0) -> dict[str, Any]:
    return {
        "frames": frames,
        "cpu_python_s": cpu,
        "cpu_native_s": 0.0,
        "cpu_system_s": 0.0,
        "wait_s": 0.0,
        "samples": round(cpu * 100),
        "mem_alloc_mb": alloc,
        "copy_mb": 0.0,
    }


def _job_profile() -> dict[str, Any]:
    frames = [
        {"file": "/env/lib/python3.11/threading.py", "function": "Thread.run", "lineno": 1},
        {"file": RUNNER, "function": "Task.__call__", "lineno": 10},  # 3.11+: qualified
        {"file": APP, "function": "burn", "lineno": 5},
        {"file": APP, "function": "helper", "lineno": 20},
        {"file": RUNNER, "function": "__call__", "lineno": 10},  # before 3.11
        {"file": APP, "function": "alloc", "lineno": 9},
        {"file": "/env/lib/python3.11/selectors.py", "function": "select", "lineno": 3},
    ]
    stacks = [
        _stack([0, 1, 2], 0.5),
        _stack([0, 1, 2, 3], 0.25),  # burn's callee: still burn's task
        _stack([0, 4, 5], 0.125, alloc=64.0),
        _stack([0, 1, 4, 1, 5], 0.125, alloc=32.0),  # a task run inside a task's runner
        _stack([0, 1], 0.0625),  # a builtin task function: no frame of its own
        _stack([6], 1.0),  # the event loop
    ]
    lines = [{"lineno": n} for n in (5, 9, 20)]
    return {
        "frames": frames,
        "stacks": stacks,
        "files": {APP: {"lines": lines}},
        "memory_profiled": True,
    }


def test_task_rows_split_the_stacks_by_task() -> None:
    rows = {r["task"]: r for r in task_rows(_job_profile(), DASK_RUNNERS, "host/w0")}
    assert set(rows) == {"burn", "alloc", NATIVE_TASK, OUTSIDE}
    assert rows["burn"]["cpu_python_s"] == 0.75 and rows["burn"]["file"] == APP
    assert rows["alloc"]["cpu_python_s"] == 0.25 and rows["alloc"]["mem_alloc_mb"] == 96.0
    assert rows[NATIVE_TASK]["cpu_python_s"] == 0.0625
    assert rows[OUTSIDE]["cpu_python_s"] == 1.0 and rows[OUTSIDE]["lines"] == []
    # Each task's lines: the innermost profiled line of its stacks, heaviest first.
    assert rows["burn"]["lines"] == [
        {"file": APP, "lineno": 5, "cpu_s": 0.5},
        {"file": APP, "lineno": 20, "cpu_s": 0.25},
    ]
    assert {r["process"] for r in rows.values()} == {"host/w0"}
    # Every sample is in exactly one row.
    total = sum(s["cpu_python_s"] for s in _job_profile()["stacks"])
    assert sum(r["cpu_python_s"] for r in rows.values()) == pytest.approx(total)


def test_task_types_add_up_across_processes() -> None:
    rows = task_rows(_job_profile(), DASK_RUNNERS, "a") + task_rows(
        _job_profile(), DASK_RUNNERS, "b"
    )
    totals = {r["task"]: r for r in by_task(rows)}
    assert totals["burn"]["processes"] == 2 and totals["burn"]["cpu_python_s"] == 1.5
    assert by_task(rows)[0]["task"] == OUTSIDE  # heaviest first


def test_spyglass_dask_without_dask_is_one_clear_line() -> None:
    code = "import sys; sys.modules['distributed'] = None; import spyglass.dask"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (
        "ImportError: spyglass.dask needs Dask's distributed scheduler: "
        "pip install 'spyglass-profiler[dask]'"
    )


def _ray_profile() -> dict[str, Any]:
    loop = "/env/lib/python3.11/site-packages/ray/_private/worker.py"
    frames = [
        {
            "file": "/env/site-packages/ray/_private/workers/default_worker.py",
            "function": "<module>",
            "lineno": 1,
        },
        {"file": loop, "function": "Worker.main_loop", "lineno": 2},
        {"file": APP, "function": "burn", "lineno": 5},
        {
            "file": "/env/site-packages/ray/_private/function_manager.py",
            "function": "actor_method_executor",
            "lineno": 3,
        },
        {
            "file": "/env/site-packages/ray/util/tracing/tracing_helper.py",
            "function": "_resume_span",
            "lineno": 4,
        },
        {"file": APP, "function": "Counter.add", "lineno": 9},
        {
            "file": "/env/site-packages/ray/_private/serialization.py",
            "function": "SerializationContext.serialize",
            "lineno": 5,
        },
        {
            "file": "/env/lib/python3.11/contextlib.py",
            "function": "_GeneratorContextManager.__exit__",
            "lineno": 6,
        },
    ]
    stacks = [
        _stack([0, 1, 2], 0.5),  # a task
        _stack([0, 1, 3, 4, 5], 0.25, alloc=8.0),  # an actor's method
        _stack([0, 1], 0.125),  # the worker between tasks (in its Cython loop)
        _stack([0, 1, 6], 0.0625),  # Ray storing a result
        _stack([0, 1, 7], 0.03125),  # a context manager of Ray's loop
    ]
    return {
        "frames": frames,
        "stacks": stacks,
        "files": {APP: {"lines": [{"lineno": 5}, {"lineno": 9}]}},
        "memory_profiled": True,
    }


def test_ray_task_rows_name_tasks_and_actor_methods_not_the_runner() -> None:
    rows = {r["task"]: r for r in task_rows(_ray_profile(), RAY_RUNNERS, "host/actor")}
    assert set(rows) == {"burn", "Counter.add", NATIVE_TASK, OUTSIDE}
    assert rows["burn"]["cpu_python_s"] == 0.5
    assert rows["Counter.add"]["cpu_python_s"] == 0.25
    assert rows["Counter.add"]["mem_alloc_mb"] == 8.0
    assert rows[OUTSIDE]["cpu_python_s"] == 0.125
    assert rows[NATIVE_TASK]["cpu_python_s"] == 0.0625 + 0.03125


def test_spyglass_ray_without_ray_is_one_clear_line() -> None:
    code = "import sys; sys.modules['ray'] = None; import spyglass.ray"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last == "ImportError: spyglass.ray needs Ray: pip install 'spyglass-profiler[ray]'"


# Ray as a worker without spyglass sees it: get_actor finds the collector, a real one
# (the class the driver sent, unpickled here), whose methods the hook's thread calls.
# Its first task begins 0.3 s after the hook ran, and no call may come before.
FAKE_RAY = """
import sys, time, types, threading
hook, cls = __import__("pickle").loads(sys.stdin.buffer.read())
collector = cls("job")
collector.me = "the collector's own process"  # another process than this worker
done = threading.Event()
calls = []
functions = types.SimpleNamespace(_num_task_executions={}, _function_execution_info={})
began = []

def first_task():
    time.sleep(0.3)
    began.append(time.monotonic())
    functions._num_task_executions["task"] = 1

class Method:
    def __init__(self, name):
        self.name = name
    def remote(self, *args):
        calls.append(time.monotonic())
        getattr(collector, self.name)(*args)
        if self.name == "final":
            done.set()

class Handle:
    def __getattr__(self, name):
        return Method(name)

ray = types.ModuleType("ray")
def get_actor(name, namespace):
    assert (name, namespace) == ("spyglass-job", "spyglass"), (name, namespace)
    return Handle()

ray.get_actor = get_actor
context = types.SimpleNamespace(get_actor_id=lambda: None)
ray.get_runtime_context = lambda: context
private, worker = types.ModuleType("ray._private"), types.ModuleType("ray._private.worker")
worker.global_worker = types.SimpleNamespace(function_actor_manager=functions)
ray._private, private.worker = private, worker
sys.modules.update({"ray": ray, "ray._private": private, "ray._private.worker": worker})
sys.modules["spyglass"] = None
hook()
threading.Thread(target=first_task).start()
assert done.wait(30), "the hook told the collector nothing"
assert began and min(calls) >= began[0], "a call before the worker's first task"
known, snapshots, finals = collector.state()
print(repr((known, finals)))
"""


def test_the_ray_hook_travels_by_value_and_runs_where_spyglass_is_not() -> None:
    cloudpickle = pytest.importorskip("cloudpickle")
    from spyglass.cluster.ray_hook import collector_class, make_setup_hook

    def user_hook() -> None:
        print("the job's own hook ran")

    hook = make_setup_hook(user_hook, "spyglass-job", "spyglass")
    payload = cloudpickle.dumps((hook, collector_class()))
    # A process that cannot import spyglass loads both (by value), and the hook runs the
    # job's own hook, then, once the worker's first task began, tells the collector why
    # this worker is not profiled.
    proc = subprocess.run(
        [sys.executable, "-c", FAKE_RAY], input=payload, capture_output=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode().splitlines()
    assert out[0] == "the job's own hook ran"
    known, finals = ast.literal_eval(out[1])
    assert list(known) == list(finals) and len(known) == 1, out[1]
    note = next(iter(finals.values()))
    assert note["pid"] != os.getpid() and note["worker"] == f"worker {note['pid']}"
    assert note["not_profiled"].startswith("spyglass is not importable there"), note
