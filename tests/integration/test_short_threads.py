"""Threads that live a few sampling intervals or less, in the shapes real programs use: a
thread-per-request HTTP server, short tasks in threads of their own or on a pool, and
threads doing the same steps in the same order. The programs measure their own CPU
(time.thread_time() in every thread); a function's share of the profile must match its
share of that, and no CPU may be parked on the `def` line of a function that does no work
itself."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    Runner,
    cpu,
    describe,
    figures_at,
    function_figures,
    line_figures,
    program,
    source_lineno,
    total_cpu,
)

# The benchmark's program: a thread-per-request HTTP server (it writes its truth to a file).
SERVER = program("short_tasks.py").parents[2] / "bench" / "accuracy" / "short_threads.py"
TASKS = program("short_tasks.py")
STEPS = program("thread_steps.py")
DIRECT = program("direct_threads.py")
# Measured over repeated runs on a loaded two-core machine, 1200 requests: the server's
# share is +0.3 to +3 points off (both intervals; sd about 1.5). Parking unsampled threads'
# CPU on a `def` line, as spyglass once did, was off by 40 points; charging each sample the
# CPU since the one before, +5 to +8. Its truth counts each thread's CPU from the thread's
# start, and the main thread's from before its imports: without them it left out CPU a
# profile shows and put the share 4 points higher. The short tasks' share is +1 to +4
# points off (3.9 and 3.11, both intervals).
SHARE_TOLERANCE_POINTS = 5.0
# Steps of 8 ms and 16 ms threads (3.2 s of CPU in each case): each step's share was within
# 3.4 points over repeated runs with fewer threads (3.11, both intervals, the machine busy);
# charging each sample the CPU since the one before put the first step of 8 ms threads at
# 47% instead of 25% and the last at 1% (10 ms interval), and was 10 to 22 points off in
# every case.
STEP_TOLERANCE_POINTS = 5.0
DEF_LINE_SHARE = 0.02


def _inclusive_cpu(profile: dict[str, Any], function: str, path: Any) -> float:
    """CPU of the stacks that pass through `function` of `path` (its callees included)."""
    frames = {
        i
        for i, f in enumerate(profile["frames"])
        if f["file"] == str(path) and f["function"].rsplit(".", 1)[-1] == function
    }
    return sum(cpu(s) for s in profile["stacks"] if frames.intersection(s["frames"]))


def _share_check(profile: dict[str, Any], truth: dict[str, float], hot: str, path: Any) -> None:
    true_share = 100 * truth[hot] / truth["threads"]
    hot_cpu = _inclusive_cpu(profile, hot, path)
    share = 100 * hot_cpu / total_cpu(profile)
    print(
        f"\n{path.name}: {hot} {share:.1f}% of the profile's CPU ({hot_cpu:.3f}s of "
        f"{total_cpu(profile):.3f}s), {true_share:.1f}% as the program measured "
        f"({truth[hot]:.3f}s of {truth['threads']:.3f}s)"
    )
    assert abs(share - true_share) <= SHARE_TOLERANCE_POINTS, (share, true_share)


def _def_lines_idle(profile: dict[str, Any], path: Any, defs: list[str]) -> None:
    total = total_cpu(profile)
    for text in defs:
        line = figures_at(profile, path, source_lineno(path, text))
        assert cpu(line) <= DEF_LINE_SHARE * total, (text, describe(line))


@pytest.mark.slow
@pytest.mark.parametrize("interval", ["0.01", "0.001"])
def test_thread_per_request_server(runner: Runner, tmp_path: Path, interval: str) -> None:
    truth_file = tmp_path / "truth.json"
    env = {**runner.env, "BENCH_REQUESTS": "1200", "BENCH_TRUTH_FILE": str(truth_file)}
    proc, profile = runner.spyglass([SERVER], options=["--interval", interval], env=env)
    assert profile is not None
    assert proc.returncode == 0, proc.stderr
    measured = json.loads(truth_file.read_text())
    truth = {"slow_digest": measured["digest_s"], "threads": measured["threads_s"]}
    _share_check(profile, truth, "slow_digest", SERVER)
    _def_lines_idle(
        profile,
        SERVER,
        ["def do_GET(self):", "def process_request_thread(self", "def slow_digest(data):"],
    )
    # Every request's thread is listed (3.9 names them Thread-N only).
    assert len(profile["threads"]) >= 1000, len(profile["threads"])


@pytest.mark.slow
@pytest.mark.parametrize("interval", ["0.01", "0.001"])
def test_short_tasks_in_threads_and_on_a_pool(runner: Runner, interval: str) -> None:
    proc, profile = runner.spyglass([TASKS], options=["--interval", interval])
    assert profile is not None
    assert proc.returncode == 0, proc.stderr
    truth = json.loads(proc.stdout)
    _share_check(profile, truth, "work", TASKS)
    _def_lines_idle(profile, TASKS, ["def runner(seconds):", "def work(seconds):"])


@pytest.mark.slow
@pytest.mark.parametrize("interval", ["0.01", "0.001"])
@pytest.mark.parametrize(("steps", "threads"), [(("2", "4", "2"), "400"), (("4", "8", "4"), "200")])
def test_steps_of_short_threads_keep_their_shares(
    runner: Runner, interval: str, steps: tuple[str, str, str], threads: str
) -> None:
    """Threads of 8 or 16 ms doing three steps in order: the CPU at a thread's start and
    end goes to the steps that ran there, not to the sample after or before it."""
    proc, profile = runner.spyglass([STEPS, *steps, threads], options=["--interval", interval])
    assert profile is not None
    assert proc.returncode == 0, proc.stderr
    truth = json.loads(proc.stdout)
    measured = {step: _inclusive_cpu(profile, step, STEPS) for step in truth}
    shares = {step: 100 * v / sum(measured.values()) for step, v in measured.items()}
    true_shares = {step: 100 * v / sum(truth.values()) for step, v in truth.items()}
    print(f"\n{steps} ms, interval {interval}: profile {shares}, measured {true_shares}")
    for step in truth:
        assert abs(shares[step] - true_shares[step]) <= STEP_TOLERANCE_POINTS, (shares, true_shares)


@pytest.mark.parametrize("interval", ["0.01", "0.001"])
def test_threads_started_without_threading_are_profiled_whole(
    runner: Runner, interval: str
) -> None:
    """_thread.start_new_thread's threads register themselves as threading's do: 120
    threads of 2 and 6 ms were found only by the control thread's scan, most of them never
    (0 samples, or a quarter of their CPU). Replacing start_new_thread changes nothing the
    program sees: an exception that ends such a thread is reported as Python reports it."""
    proc, profile = runner.spyglass([DIRECT], options=["--interval", interval])
    assert profile is not None
    assert proc.returncode == 0, proc.stderr
    truth = json.loads(proc.stdout)
    _share_check(profile, truth, "light", DIRECT)
    covered = _inclusive_cpu(profile, "light", DIRECT) + _inclusive_cpu(profile, "heavy", DIRECT)
    assert covered >= 0.8 * truth["threads"], (covered, truth)
    assert len(profile["threads"]) >= 120, len(profile["threads"])
    # Python's own words: "... started by: <function raises at 0x...>" before 3.13, "...
    # started by <function raises at 0x...>:" from 3.13 on.
    assert re.search(r"Exception ignored in thread started by:? <function raises at ", proc.stderr)
    report = proc.stderr.split("Exception ignored", 1)[1]
    # The traceback's only frame is the program's (no spyglass file, no native entry).
    assert re.findall(r'File "([^"]+)"', report) == [str(DIRECT)], report
    assert "_native" not in report and "ThreadEntry" not in report, report


SHORT_WAITS = program("short_waits.py")
# The waits of threads that live less than an interval: each line's wait_s against what
# the threads measured, less their time queued for a CPU. Before a thread's waits since its
# last charge were charged when it ended, the 3 ms line showed 2% of its wait. Each
# thread's wait is split as its kind's threads were found blocked, so a line's error is
# the sampling error of those notes (about 500 in 1,200 threads). With 2,400 threads, over
# 18 runs (10 ms interval; 14 of them with a CPU hog running, 6 on Python 3.9): the 3 ms
# line -3.0% to +3.9%, the 1 ms line -16.1% to +3.3%. Before the notes were read at a
# random moment (not only of threads with wait not yet charged) and a new thread's queued
# time before its first line was left off its waits, the 1 ms line was -14% to -37% with a
# hog running (1,200 threads), and CI saw -20.6%.
SHORT_WAIT_ERROR = 0.2
SHORT_WAIT_TOTAL_ERROR = 0.1


@pytest.mark.slow
def test_the_waits_of_threads_shorter_than_an_interval_are_charged(runner: Runner) -> None:
    proc, profile = runner.spyglass([SHORT_WAITS, "2400"])
    assert profile is not None and proc.returncode == 0, proc.stderr
    truth = json.loads(proc.stdout)
    for key in ("db", "cache"):
        line = line_figures(profile, SHORT_WAITS, f"# wait:{key}")
        error = line["wait_s"] / truth[key] - 1
        print(f"\n{key}: wait_s {line['wait_s']:.3f} s of {truth[key]:.3f} s ({error:+.1%})")
        assert abs(error) <= SHORT_WAIT_ERROR, (key, describe(line), truth)
    charged = sum(line_figures(profile, SHORT_WAITS, f"# wait:{k}")["wait_s"] for k in truth)
    assert abs(charged / sum(truth.values()) - 1) <= SHORT_WAIT_TOTAL_ERROR, (charged, truth)


PHASES = program("thread_phases.py")
# Measured: each job within 3 % (10 ms interval). Drawn from every point of the run, as the
# young threads' CPU once was, the second phase was charged 68 % to the first one's job.
PHASE_ERROR = 0.2


@pytest.mark.slow
def test_threads_whose_work_changes_over_the_run_are_charged_as_they_work_then(
    runner: Runner,
) -> None:
    proc, profile = runner.spyglass([PHASES])
    assert profile is not None and proc.returncode == 0, proc.stderr
    truth = json.loads(proc.stdout)
    for job in ("job_a", "job_b"):
        got = cpu(function_figures(profile, job, PHASES))
        print(f"\n{job}: {got:.3f} s of {truth[job]:.3f} s")
        assert abs(got / truth[job] - 1) <= PHASE_ERROR, (job, got, truth)


_BAD_STARTS = """
import _thread
for a in [(42, ()), (print, 5), (print, (), 5)]:
    try:
        _thread.start_new_thread(*a)
    except TypeError as e:
        print(e)
"""


def test_the_replaced_start_new_thread_refuses_what_pythons_refuses(runner: Runner) -> None:
    """A non-callable was wrapped as the new thread's entry and accepted: the thread then
    failed on its own, instead of a TypeError at the call."""
    plain = runner.python(["-c", _BAD_STARTS])
    proc, _ = runner.spyglass(["-c", _BAD_STARTS])
    assert plain.stdout.count("\n") == 3, plain.stdout
    assert proc.stdout == plain.stdout, proc.stderr
