"""Which task type spent what: a profile's stacks split by the task each sample ran in.

A cluster engine runs a task by calling its function from a frame of its own (Dask's
``_run_task_simple`` and its graph's ``Task.__call__``, Ray's worker loop and actor method
executor). Every stack
keeps all Python frames, the engine's included, so the task a sample belongs to is read
off its stack: the frame just inside the innermost *runner* frame is the task's function.
Nothing is added to the sampler (no per-thread label for the signal handler to read) and
every figure a stack carries (the four times, samples, allocation, copies) splits exactly
as the stacks do. Samples outside any runner frame (the worker's own event loop,
communication, idle threads) form the row ``OUTSIDE``.

A task row: ``task`` (its function's name), ``file`` (where that function is), ``process``
(the label of the process it ran in), the times and samples, in a memory profile
``mem_alloc_mb`` and ``copy_mb``, and ``lines``: its heaviest lines by CPU, each
``{"file", "lineno", "cpu_s"}`` (the innermost frame of its stacks that is a profiled line).
"""

from __future__ import annotations

from spyglass.profile_model import fields
from spyglass.profile_model.module_paths import stdlib_dir

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

#: The frames Dask's workers run a task's function from: (file ending, function).
#: (Not distributed's ``_run_task_simple``, which wraps the call in its own bookkeeping.)
DASK_RUNNERS: tuple[tuple[str, str], ...] = (
    ("dask/_task_spec.py", "__call__"),  # dask 2024.12 and later
    ("distributed/worker.py", "apply_function_simple"),  # older ones
    ("dask/core.py", "_execute_task"),
    ("distributed/worker.py", "execute_task"),
)
#: The frames Ray's workers run a task's function or an actor's method from. Ray's worker
#: waits for its next task inside ``main_loop`` (in its Cython task loop): that frame with
#: nothing inside it is the worker between tasks, not a task (IDLE_LOOPS).
RAY_RUNNERS: tuple[tuple[str, str], ...] = (
    ("ray/_private/worker.py", "main_loop"),
    ("ray/_private/function_manager.py", "actor_method_executor"),
    ("ray/util/tracing/tracing_helper.py", "_resume_span"),
)
#: Where an engine's own code lives that its runner frames call around a task (Ray's
#: worker loop deserialises arguments and serialises results from Cython, so those calls
#: sit just inside ``main_loop`` as a task's function does): the runner's, not a task;
#: as is the standard library's code just inside an idle loop (_in_stdlib).
RUNNER_INTERNALS: tuple[str, ...] = ("/ray/_private/",)
#: Runner frames that are an engine's loop between tasks when they are the innermost frame.
IDLE_LOOPS: tuple[tuple[str, str], ...] = (("ray/_private/worker.py", "main_loop"),)
OUTSIDE = "(outside tasks)"
#: The runner frame innermost: a task whose function has no Python frame (a builtin, a C
#: extension's function), or the runner's own work around the call.
NATIVE_TASK = "(task runner or native function)"
TOP_LINES = 5
_CPU_KEYS = ("cpu_python_s", "cpu_native_s", "cpu_system_s")
_MEMORY_KEYS = ("mem_alloc_mb", "copy_mb")


def _is_runner(frame: Mapping[str, Any], runners: Iterable[tuple[str, str]]) -> bool:
    file = str(frame["file"]).replace("\\", "/")
    function = str(frame["function"]).rpartition(".")[2]  # 3.11+ names methods Class.name
    return any(function == fn and file.endswith("/" + end) for end, fn in runners)


def _in_stdlib(file: object) -> bool:
    """Whether a file is the standard library's (a loop's context managers, say, which
    Ray's Cython task loop calls around each task)."""
    path = str(file).replace("\\", "/")
    found = stdlib_dir(path, ("/lib/", "/lib64/"), free_threaded=True)
    return "-packages/" not in path and found is not None


def task_rows(
    profile: Mapping[str, Any], runners: Sequence[tuple[str, str]], process: str
) -> list[dict[str, Any]]:
    """The task rows of one process's profile, heaviest (CPU) first."""
    frames = profile["frames"]
    runner = [_is_runner(f, runners) for f in frames]
    idle = [_is_runner(f, IDLE_LOOPS) for f in frames]
    internal = [
        any(part in str(f["file"]).replace("\\", "/") for part in RUNNER_INTERNALS) for f in frames
    ]
    profiled = {
        (path, int(line["lineno"]))
        for path, entry in profile["files"].items()
        for line in entry["lines"]
    }
    memory = bool(profile.get("memory_profiled"))
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for stack in profile["stacks"]:
        indexes = stack["frames"]
        inner = max((i for i, f in enumerate(indexes) if runner[f]), default=-1)
        if inner < 0 or (inner + 1 == len(indexes) and idle[indexes[inner]]):
            key = (OUTSIDE, "")
        elif inner + 1 < len(indexes) and not (
            internal[indexes[inner + 1]]
            or (idle[indexes[inner]] and _in_stdlib(frames[indexes[inner + 1]]["file"]))
        ):
            first = frames[indexes[inner + 1]]
            key = (str(first["function"]), str(first["file"]))
        else:
            key = (NATIVE_TASK, "")
        row = rows.get(key)
        if row is None:
            row = rows[key] = {"task": key[0], "file": key[1], "process": process}
            row.update(dict.fromkeys((*fields.TIME_KEYS, *(_MEMORY_KEYS if memory else ())), 0.0))
            row["samples"], row["lines"] = 0, {}
        for name in (*fields.TIME_KEYS, *(_MEMORY_KEYS if memory else ())):
            row[name] += float(stack.get(name, 0.0))
        row["samples"] += int(stack["samples"])
        place = next(
            (
                (frames[f]["file"], int(frames[f]["lineno"]))
                for f in reversed(indexes[inner + 1 :])
                if (frames[f]["file"], int(frames[f]["lineno"])) in profiled
            ),
            None,
        )
        if place is not None:
            cpu = sum(float(stack[k]) for k in _CPU_KEYS)
            row["lines"][place] = row["lines"].get(place, 0.0) + cpu
    out = [_finished(row) for row in rows.values()]
    out.sort(key=lambda r: -sum(r[k] for k in _CPU_KEYS))
    return out


def _finished(row: dict[str, Any]) -> dict[str, Any]:
    lines = sorted(row.pop("lines").items(), key=lambda kv: -kv[1])[:TOP_LINES]
    for key, value in row.items():
        if isinstance(value, float):
            row[key] = round(value, 9)
    row["lines"] = [
        {"file": file, "lineno": lineno, "cpu_s": round(cpu, 9)}
        for (file, lineno), cpu in lines
        if cpu > 0
    ]
    return row


def by_task(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows of every process added up per task type (for reports), heaviest first,
    each with ``processes``: how many processes ran it."""
    totals: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        key = (str(row["task"]), str(row.get("file") or ""))
        into = totals.setdefault(key, {"task": key[0], "file": key[1], "processes": 0})
        into["processes"] += 1
        for name, value in row.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                into[name] = into.get(name, 0) + value
    out = list(totals.values())
    out.sort(key=lambda r: -sum(float(r.get(k, 0.0)) for k in _CPU_KEYS))
    return out
