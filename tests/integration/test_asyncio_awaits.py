"""asyncio: the time a task spends suspended goes to the await it is suspended at (and up
its await chain, inclusive), against the program's own clock around each await; the event
loop's idle wait is shared among the suspended tasks instead of sitting on asyncio.run."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

import pytest

from helpers import (
    ProgramRun,
    Runner,
    cpu,
    describe,
    line_figures,
    program,
    source_lineno,
    stdout_json,
)

AWAITS = program("asyncio_awaits.py")
SLEEPER = program("sleeper.py")


@pytest.fixture(scope="module")
def awaits_run(make_runner: Callable[[str], Runner]) -> ProgramRun:
    proc, profile = make_runner("asyncio_awaits").spyglass([AWAITS])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    return proc, profile


def close(got: float, truth: float, interval: float) -> bool:
    """Within 20 % of the truth, and a few intervals: the loop is found at its first wait,
    and each await's start and end fall between two scans."""
    return abs(got - truth) <= 0.2 * truth + 4 * interval


def inclusive_await(profile: Mapping[str, Any], path: Path, marker: str) -> float:
    """The await time of every stack through the line of `path` holding `marker`."""
    lineno = source_lineno(path, marker)
    frames = profile["frames"]
    hits = {
        i for i, f in enumerate(frames) if f["file"] == str(path) and int(f["lineno"]) == lineno
    }
    return sum(float(s.get("await_s", 0.0)) for s in profile["stacks"] if hits & set(s["frames"]))


@pytest.mark.parametrize(
    ("key", "marker"),
    [
        ("long", "# await:long"),
        ("short", "# await:short"),
        ("nested", "# await:nested"),
        ("anext", "# await:anext"),
        ("aenter", "# await:aenter"),
        ("cancelled", "# await:cancelled"),
    ],
)
def test_each_await_line_gets_its_own_time(awaits_run: ProgramRun, key: str, marker: str) -> None:
    """Concurrent awaits of 0.6 s and 0.3 s show as such; a cancelled task's await stops
    counting when it is cancelled."""
    proc, profile = awaits_run
    truth = float(stdout_json(proc)[key])
    line = line_figures(profile, AWAITS, marker)
    got = float(line.get("await_s", 0.0))
    print(f"\n{key}: measured {truth:.3f}s, await_s {got:.3f}s ({describe(line)})")
    assert close(got, truth, profile["interval_s"]), (key, truth, got)
    assert cpu(line) <= 0.1 * truth + 0.02, describe(line)


@pytest.mark.parametrize(
    ("key", "marker"),
    [("nested", "# await:outer"), ("for", "# await:for"), ("with", "# await:with")],
)
def test_lines_up_the_await_chain_are_inclusive(
    awaits_run: ProgramRun, key: str, marker: str
) -> None:
    """The coroutine awaiting a coroutine, `async for` and `async with` lines carry the
    time of the awaits under them, through the stacks."""
    proc, profile = awaits_run
    truth = float(stdout_json(proc)[key])
    got = inclusive_await(profile, AWAITS, marker)
    print(f"\n{marker}: measured {truth:.3f}s, inclusive await_s {got:.3f}s")
    assert close(got, truth, profile["interval_s"]), (marker, truth, got)


def test_tasks_are_listed_with_their_await_time(awaits_run: ProgramRun) -> None:
    proc, profile = awaits_run
    measured = stdout_json(proc)
    tasks = profile.get("tasks") or []
    print(f"\ntasks: {tasks}")
    by_name = {t["name"]: t for t in tasks}
    assert "doomed" in by_name, tasks
    assert by_name["doomed"]["coroutine"] == "doomed"
    assert close(by_name["doomed"]["await_s"], measured["cancelled"], profile["interval_s"])
    longs = [t for t in tasks if t["coroutine"] == "long_wait"]
    assert len(longs) == 1, tasks
    assert close(longs[0]["await_s"], measured["long"], profile["interval_s"]), longs
    assert profile["await_s"] == pytest.approx(sum(t["await_s"] for t in tasks), rel=1e-6)


def test_the_loop_wait_is_no_longer_all_on_asyncio_run(awaits_run: ProgramRun) -> None:
    """The loop thread's wait while tasks are suspended is theirs: the asyncio.run line
    keeps less than a fifth of the run's wait, the await lines get the rest."""
    _, profile = awaits_run
    run_line = line_figures(profile, AWAITS, "asyncio.run(main())")
    print(f"\nasyncio.run line: {describe(run_line)}; run's wait {profile['wait_s']:.3f}s")
    assert run_line["wait_s"] <= 0.2 * profile["wait_s"], describe(run_line)
    long = line_figures(profile, AWAITS, "# await:long")
    assert long["wait_s"] > 0, describe(long)


def test_a_program_without_an_event_loop_has_no_await(
    make_runner: Callable[[str], Runner],
) -> None:
    proc, profile = make_runner("no_loop").spyglass([SLEEPER, "0.2"])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    assert profile.get("await_s", 0.0) == 0.0
    assert "tasks" not in profile


@pytest.mark.parametrize(("tasks", "seconds"), [("600", "0.6"), ("20000", "1.0")])
def test_more_tasks_than_a_scan_reads_add_up(
    make_runner: Callable[[str], Runner], tasks: str, seconds: str
) -> None:
    """Many tasks awaiting at once: each scan reads a random 256 of them, scaled up; with
    20,000 a scan costs enough that scans are spaced out, each charging the longer time
    since the last. The await line's time is still the sum the program measured. With 600
    tasks a scan reads 256, and scans come up to 200 ms apart: the stretch after the last
    scan that found the tasks, which they all end in together, went uncharged (0.6 s sleeps
    lost up to 21 % on 3.9 beside a busy process); it is charged by the scan that finds
    them gone, or as the run ends (within 2 % in five runs)."""
    many = program("asyncio_many_tasks.py")
    proc, profile = make_runner(f"many_tasks_{tasks}").spyglass([many, tasks, seconds])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    truth = float(stdout_json(proc)["await_s"])
    got = float(line_figures(profile, many, "# await:many").get("await_s", 0.0))
    print(f"\n{tasks} tasks: measured {truth:.1f}s of awaits, await_s {got:.1f}s")
    assert abs(got - truth) <= 0.2 * truth, (truth, got)


BLOCKING = program("asyncio_blocking_call.py")


def test_a_call_that_blocks_the_loop_is_wait_on_its_own_line(runner: Runner) -> None:
    """A loop thread's wait was shared among its suspended tasks wherever it blocked: a
    coroutine's time.sleep, which holds up every task on the loop and is what an asyncio
    program is profiled to find, showed 0.01 s of its 1 s on its line. The loop thread's
    stack now tells the loop waiting for an event (its tasks' wait) from a blocking call
    in a task (that line's wait) and from code after the loop has ended (a sleep after
    asyncio.run was counted as the last tasks' await, up to 16 % too much with 600)."""
    proc, profile = runner.spyglass([BLOCKING])
    assert profile is not None and proc.returncode == 0, proc.stderr
    truth = stdout_json(proc)
    interval = profile["interval_s"]
    blocking = line_figures(profile, BLOCKING, "# wait:blocking")
    after = line_figures(profile, BLOCKING, "# wait:after")
    waiter = line_figures(profile, BLOCKING, "# await:waiter")
    print(f"\nblocking {describe(blocking)}; after {describe(after)}; truth {truth}")
    print(f"waiter await_s {waiter['await_s']:.1f} s of {truth['await_s']:.1f} s")
    assert abs(blocking["wait_s"] - truth["blocked_s"]) <= 0.15 * truth["blocked_s"] + 2 * interval
    assert abs(after["wait_s"] - truth["after_s"]) <= 0.15 * truth["after_s"] + 2 * interval
    assert abs(waiter["await_s"] / truth["await_s"] - 1) <= 0.1, (waiter, truth)


BUSY_WORKER = program("async_busy_worker.py")


def test_a_task_working_between_awaits_is_charged_only_its_awaits(runner: Runner) -> None:
    """A scan takes the GIL as the loop gives it up, which is as a task suspends: charging
    every task found suspended the whole time since the last scan charged the task's own
    8 ms of work between two 2 ms sleeps as await (3 to 4 times its awaits)."""
    proc, profile = runner.spyglass([BUSY_WORKER])
    assert profile is not None and proc.returncode == 0, proc.stderr
    truth = json.loads(proc.stdout)["await"]
    line = line_figures(profile, BUSY_WORKER, "# await:sleep")
    print(f"\nawait_s {line['await_s']:.3f} s of {truth:.3f} s")
    assert abs(line["await_s"] / truth - 1) <= 0.25, (line, truth)


def test_scans_make_no_frame_objects(runner: Runner) -> None:
    """Reading a suspended coroutine's `cr_frame` makes a frame object for it on 3.11+,
    kept until the coroutine ends: scans made one for every coroutine of every task they
    read (600 here), and garbage collections with them. The scan reads the frame in place:
    as many frame objects as under plain python, and the awaits still found."""
    frames = program("asyncio_frame_objects.py")
    plain = runner.python([frames])
    assert plain.returncode == 0, plain.stderr
    proc, profile = runner.spyglass([frames])
    assert profile is not None and proc.returncode == 0, proc.stderr
    got, expected = stdout_json(proc), stdout_json(plain)
    assert got["frame_objects"] == expected["frame_objects"], (got, expected)
    line = line_figures(profile, frames, "# await:leaf")
    assert abs(line["await_s"] / got["await_s"] - 1) <= 0.25, (line, got)


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("chrt") is None or len(os.sched_getaffinity(0)) < 2,
    reason="needs root (a real-time busy loop), chrt and two CPUs",
)
def test_a_stall_of_the_scans_is_shared_between_the_awaits_it_spans(runner: Runner) -> None:
    """The scans stop for 0.3 s (their thread kept off the CPUs) across the end of a 0.4 s
    await followed by three of 0.1 s. Where the task was in that gap is not known: all of
    it went to the await the next scan found (0.24 s and 0.46 s against 0.4 s and 0.3 s);
    now half goes to each."""
    stalled = program("asyncio_stalled_scans.py")
    proc, profile = runner.spyglass([stalled])
    assert profile is not None and proc.returncode == 0, proc.stderr
    truth = stdout_json(proc)
    if not truth["stalled"] or truth["first"] > 0.45:
        pytest.skip(f"the stall did not take place as set up: {truth}")
    for key in ("first", "then"):
        got = line_figures(profile, stalled, f"# await:{key}")["await_s"]
        print(f"\n{key}: measured {truth[key]:.3f} s, await_s {got:.3f} s")
        assert close(got, truth[key], profile["interval_s"]), (key, truth[key], got)
