"""spyglass.dask.profile: a Dask job's workers profiled into one profile through Dask's own
communication. The job (programs/dask_job.py) measures each task's thread CPU time and the
bytes it allocated, and says which worker process ran it; the merged profile's task table
must show each task type on each worker with those figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import Runner, cpu, load_profile, program, source_lineno

pytest.importorskip("distributed", reason="the dask extra is not installed")

JOB = program("dask_job.py")
CPU_TOLERANCE = 0.15  # of the task's own CPU time, plus a few sampling intervals
ALLOC_TOLERANCE = 0.15  # of the bytes the task allocated (sampled at a 64 KiB mean)
MIB = 1 << 20


def _truth(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _run_job(runner: Runner, where: str, *extra: str) -> tuple[dict[str, Any], dict[str, Any]]:
    out, truth = runner.new_path("job"), runner.new_path("truth")
    proc = runner.python([JOB, where, out, truth, *extra], timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return load_profile(out), _truth(truth)


def _measured(truth: dict[str, Any]) -> dict[tuple[str, int], dict[str, float]]:
    """(task type, pid) -> the CPU seconds and MiB its tasks measured themselves."""
    out: dict[tuple[str, int], dict[str, float]] = defaultdict(lambda: {"cpu": 0.0, "mib": 0.0})
    for result in truth["results"]:
        key = (result["task"], result["pid"])
        out[key]["cpu"] += result["cpu_s"]
        out[key]["mib"] += result["bytes"] / MIB
    return out


def _row(profile: dict[str, Any], task: str, pid: int) -> dict[str, Any]:
    rows = [r for r in profile["task_types"] if r["task"] == task and r["pid"] == pid]
    assert len(rows) == 1, (task, pid, profile["task_types"])
    return rows[0]


def _check_task_rows(profile: dict[str, Any], truth: dict[str, Any], pids: list[int]) -> None:
    """Each task type's row on each of `pids`: its CPU, its allocation, and its lines (those
    of the task's own function in the job's file)."""
    measured = _measured(truth)
    burn = source_lineno(JOB, "# task:burn")
    alloc = source_lineno(JOB, "# task:alloc")
    functions = {  # each task function's lines, from its def to the next one's
        "burn": range(source_lineno(JOB, "def burn("), source_lineno(JOB, "def alloc(")),
        "alloc": range(source_lineno(JOB, "def alloc("), source_lineno(JOB, "def run_on(")),
    }
    slack = 4 * profile["interval_s"]
    for pid in pids:
        for task, body in (("burn", {burn - 1, burn}), ("alloc", {alloc})):
            row, truth_of = _row(profile, task, pid), measured[(task, pid)]
            print(
                f"\n{row['process']} {task}: {cpu(row):.3f} s (measured {truth_of['cpu']:.3f} s), "
                f"{row.get('mem_alloc_mb', 0):.0f} MiB (allocated {truth_of['mib']:.0f})"
            )
            assert abs(cpu(row) - truth_of["cpu"]) <= CPU_TOLERANCE * truth_of["cpu"] + slack, row
            lines = {(x["file"], x["lineno"]) for x in row["lines"]}
            # Its lines are its function's, the heaviest its work's (the loop of burn or
            # its body; the comprehension of alloc).
            assert lines and lines <= {(str(JOB), n) for n in functions[task]}, row["lines"]
            assert row["lines"][0]["lineno"] in body, row["lines"]
            if task == "alloc":
                assert abs(row["mem_alloc_mb"] - truth_of["mib"]) <= (
                    ALLOC_TOLERANCE * truth_of["mib"]
                ), row


def _check_worker_entries(profile: dict[str, Any], truth: dict[str, Any]) -> None:
    host = os.uname().nodename
    workers = [p for p in profile["processes"] if not p.get("not_profiled")]
    for entry in workers:
        assert entry["host"] == host and entry["worker"], entry
    assert set(truth["pids"].values()) <= {p["pid"] for p in workers}
    assert profile["program"] == "dask job"
    assert {s["host"] for s in profile["sources"]} == {host}


@pytest.mark.slow
def test_local_cluster_job(runner: Runner) -> None:
    profile, truth = _run_job(runner, "local")
    _check_worker_entries(profile, truth)
    _check_task_rows(profile, truth, list(truth["pids"].values()))
    # The job's file is the client's script (cloudpickle sent its functions by value), and
    # its burn line adds up both workers'.
    measured = sum(r["cpu_s"] for r in truth["results"] if r["task"] == "burn")
    lines = profile["files"][str(JOB)]["lines"]
    burn = source_lineno(JOB, "# task:burn")
    body = sum(cpu(x) for x in lines if x["lineno"] in (burn - 1, burn))
    assert abs(body - measured) <= CPU_TOLERANCE * measured + 8 * profile["interval_s"]
    assert any("task:burn" in x["source"] for x in lines)


@pytest.mark.slow
def test_a_killed_worker_keeps_its_last_snapshot(runner: Runner) -> None:
    profile, truth = _run_job(runner, "local", "--kill")
    by_pid = {p["pid"]: p for p in profile["processes"]}
    victim = truth["pids"][sorted(truth["pids"])[-1]]
    seen = [(p["pid"], p.get("recovered"), p.get("not_profiled")) for p in profile["processes"]]
    assert victim in by_pid, (victim, seen)
    assert by_pid[victim].get("recovered") is True, by_pid[victim]
    # The worker its nanny started during the block was profiled from when it joined.
    joined = {r["pid"] for r in truth["results"]} - set(truth["pids"].values())
    assert len(joined) == 1 and not by_pid[next(iter(joined))].get("recovered")
    # Its work had reached a snapshot before the kill; the joined worker's is whole.
    _check_task_rows(profile, truth, [victim, *joined])


def _wait_for(path: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "no scheduler file"
        time.sleep(0.1)


@pytest.fixture
def scheduler_and_workers(tmp_path: Path, child_env: dict[str, str]) -> Iterator[Path]:
    """A `dask scheduler` process and `dask worker` processes (standing in for other
    hosts): two that can import spyglass and one that cannot."""
    scheduler_file = tmp_path / "scheduler.json"
    procs = []
    common = ["--scheduler-file", str(scheduler_file), "--no-dashboard"]

    def start(argv: list[str]) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            argv,
            cwd=tmp_path,
            env=child_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(proc)
        return proc

    scheduler = start([sys.executable, "-m", "distributed.cli.dask_scheduler", *common])
    try:
        _wait_for(scheduler_file, scheduler)
        worker = [sys.executable, "-m", "distributed.cli.dask_worker", *common, "--nthreads", "1"]
        start(worker)
        start(worker)
        # A worker whose Python cannot import spyglass (another environment, another host).
        blocked = "import sys; sys.modules['spyglass'] = None; from distributed.cli.dask_worker import main; main()"  # noqa: E501
        start([sys.executable, "-c", blocked, *common, "--nthreads", "1", "--no-nanny"])
        yield scheduler_file
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.slow
def test_scheduler_and_worker_processes(runner: Runner, scheduler_and_workers: Path) -> None:
    profile, truth = _run_job(runner, str(scheduler_and_workers), "--workers", "3")
    _check_worker_entries(profile, truth)
    unprofiled = [p for p in profile["processes"] if p.get("not_profiled")]
    assert len(unprofiled) == 1, profile["processes"]
    assert "spyglass" in unprofiled[0]["not_profiled"], unprofiled
    profiled = [p["pid"] for p in profile["processes"] if not p.get("not_profiled")]
    assert len(profiled) == 2
    _check_task_rows(profile, truth, profiled)
