"""spyglass.ray.profile: a Ray job's worker processes (task workers and actors) profiled into
one profile through Ray's own mechanisms. The job (programs/ray_job.py) measures each task's
thread CPU time and the bytes it allocated, and says which process ran it; the merged
profile's task table must show each task type in each process with those figures."""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from helpers import Runner, cpu, load_profile, program, source_lineno

pytest.importorskip("ray", reason="the ray extra is not installed")

JOB = program("ray_job.py")
CPU_TOLERANCE = 0.15  # of the task's own CPU time, plus a few sampling intervals
ALLOC_TOLERANCE = 0.15  # of the bytes the task allocated (sampled at a 64 KiB mean)
MIB = 1 << 20


def _failure(stderr: str) -> str:
    """What a failed job printed: where a worker crashed (Ray prints the check that failed
    and the stack after it, then much else) and how it ended."""
    starts = [stderr.find(m) for m in ("Check failed", "*** SIG", "StackTrace Information")]
    start = min((i for i in starts if i >= 0), default=-1)
    head = stderr[max(start - 500, 0) : start + 4000] + "\n...\n" if start >= 0 else ""
    return head + stderr[-3000:]


def _run_job(runner: Runner, *extra: str) -> tuple[dict[str, Any], dict[str, Any]]:
    out, truth = runner.new_path("job"), runner.new_path("truth")
    proc = runner.python([JOB, out, truth, *extra], timeout=300)
    assert proc.returncode == 0, _failure(proc.stderr)
    data: dict[str, Any] = json.loads(truth.read_text())
    return load_profile(out), data


def _measured(truth: dict[str, Any]) -> dict[tuple[str, int], dict[str, float]]:
    """(task type, pid) -> the CPU seconds and MiB its tasks measured themselves."""
    out: dict[tuple[str, int], dict[str, float]] = defaultdict(lambda: {"cpu": 0.0, "mib": 0.0})
    for result in truth["results"]:
        key = (result["task"], result["pid"])
        out[key]["cpu"] += result["cpu_s"]
        out[key]["mib"] += result["bytes"] / MIB
    return out


def _check_task_rows(profile: dict[str, Any], truth: dict[str, Any], pids: set[int]) -> None:
    """Each task type's row in each process of `pids`: named as Ray calls it (the actor's
    method by its class from 3.11, whose code objects know it), its CPU, its allocation, and
    its heaviest line (the task's work)."""
    lines = {"burn": source_lineno(JOB, "# task:burn"), "alloc": source_lineno(JOB, "# task:alloc")}
    actors = set(truth["actors"])
    slack = 4 * profile["interval_s"]
    expected = {k: v for k, v in _measured(truth).items() if k[1] in pids}
    assert {pid for _, pid in expected} == pids, (expected, pids)
    for (task, pid), truth_of in expected.items():
        named = f"Worker.{task}" if pid in actors and sys.version_info >= (3, 11) else task
        rows = [r for r in profile["task_types"] if r["pid"] == pid and r["task"] == named]
        assert len(rows) == 1, (named, pid, profile["task_types"])
        row = rows[0]
        print(
            f"\n{row['process']} {named}: {cpu(row):.3f} s (measured {truth_of['cpu']:.3f} s), "
            f"{row.get('mem_alloc_mb', 0):.0f} MiB (allocated {truth_of['mib']:.0f})"
        )
        assert abs(cpu(row) - truth_of["cpu"]) <= CPU_TOLERANCE * truth_of["cpu"] + slack, row
        heaviest = row["lines"][0]
        assert heaviest["file"] == str(JOB), row["lines"]
        assert heaviest["lineno"] in (lines[task] - 1, lines[task]), row["lines"]
        if task == "alloc":
            assert abs(row["mem_alloc_mb"] - truth_of["mib"]) <= ALLOC_TOLERANCE * truth_of["mib"]


def _profiled(profile: dict[str, Any]) -> dict[int, dict[str, Any]]:
    host = os.uname().nodename
    out = {}
    for entry in profile["processes"]:
        if not entry.get("not_profiled"):
            assert entry["host"] == host and entry["worker"], entry
            out[int(entry["pid"])] = entry
    return out


@pytest.mark.slow
def test_ray_job_of_tasks_and_actors(runner: Runner) -> None:
    profile, truth = _run_job(runner)
    assert profile["program"] == "ray job"
    profiled = _profiled(profile)
    ran = {r["pid"] for r in truth["results"]}
    assert ran <= set(profiled), (ran, profiled)
    retired = truth["retired"]
    for pid in (*truth["actors"], retired):
        assert profiled[pid]["worker"] == f"actor Worker {pid}", profiled[pid]
    # The actor that ended before the job is its last snapshot; every other is whole.
    assert profiled[retired].get("recovered") is True, profiled[retired]
    assert all(not p.get("recovered") for k, p in profiled.items() if k != retired), profiled
    _check_task_rows(profile, truth, ran - {retired})
    # The tasks' own file is the driver's script (cloudpickle sent its functions by value,
    # keeping their file), and its burn line adds up every process's.
    measured = sum(
        r["cpu_s"] for r in truth["results"] if r["task"] == "burn" and r["pid"] != retired
    )
    burn = source_lineno(JOB, "# task:burn")
    body = sum(
        cpu(x) for x in profile["files"][str(JOB)]["lines"] if x["lineno"] in (burn - 1, burn)
    )
    # Less the retired actor's, which is what its last snapshot had.
    body -= sum(
        cpu(r) for r in profile["task_types"] if r["pid"] == retired and "burn" in r["task"]
    )
    assert abs(body - measured) <= CPU_TOLERANCE * measured + 8 * profile["interval_s"]
    # Ray's own work between tasks is not a task type.
    tasks = {r["task"] for r in profile["task_types"]}
    assert not {t for t in tasks if "deserialize" in t or "serialize" in t}, tasks


@pytest.mark.slow
def test_a_killed_actor_keeps_its_snapshot_and_an_unprofiled_one_says_why(
    runner: Runner, tmp_path: Path
) -> None:
    blocked = tmp_path / "elsewhere"
    blocked.mkdir()
    # Another environment, where spyglass cannot be imported.
    (blocked / "sitecustomize.py").write_text("import sys\nsys.modules['spyglass'] = None\n")
    profile, truth = _run_job(runner, "--kill", "--blocked", str(blocked))
    profiled = _profiled(profile)
    victim = truth["actors"][1]
    assert profiled[victim].get("recovered") is True, profiled[victim]
    assert profiled[victim]["worker"] == f"actor Worker {victim}"
    unprofiled = [p for p in profile["processes"] if p.get("not_profiled")]
    assert len(unprofiled) == 1, profile["processes"]
    assert "spyglass is not importable there" in unprofiled[0]["not_profiled"], unprofiled
    # The blocked actor's work ran (the job went on) but is in no profile.
    blocked_pid = truth["results"][-1]["pid"]
    assert unprofiled[0]["pid"] == blocked_pid and blocked_pid not in profiled
    _check_task_rows(profile, truth, set(truth["actors"]))


@pytest.mark.slow
def test_a_worker_calls_the_collector_only_once_its_first_task_began(
    runner: Runner, tmp_path: Path
) -> None:
    """Ray aborts a worker that calls an actor before its first task began (a null runtime
    environment reaches a check in its cache): spyglass's worker threads wait for that
    task. The test is of the wait's signal, in real workers of the installed Ray: false as
    the setup hook runs, true in a task and in an actor's method, and the wait returns."""
    proc = runner.python([program("ray_first_task.py"), str(tmp_path)], timeout=300)
    assert proc.returncode == 0, _failure(proc.stderr)
    pids = json.loads((tmp_path / "pids.json").read_text())
    assert len(set(pids)) == 3, pids

    def seen(pid: int, event: str) -> list[Any]:
        path = tmp_path / f"{pid}-{event}.json"
        assert path.exists(), (pid, event, sorted(p.name for p in tmp_path.iterdir()))
        value: list[Any] = json.loads(path.read_text())
        return value

    for pid in pids:
        hook, waited = seen(pid, "hook"), seen(pid, "waited")
        assert hook[0] is False, (pid, hook)
        assert waited[1] >= hook[1], (pid, hook, waited)
    for pid in pids[:2]:
        assert seen(pid, "task")[0] is True
    assert seen(pids[2], "method")[0] is True
