"""Threads and waiting: CPU goes to the threads that use it, off-CPU time to the line a
thread is blocked on, and never the other way round."""

from __future__ import annotations

import pytest

from helpers import (
    ProgramRun,
    Runner,
    cpu,
    describe,
    function_figures,
    line_figures,
    program,
    stdout_json,
    total_cpu,
    zero_figures,
)

THREADS = program("threads_busy_main_joins.py")
SLEEPER = program("sleeper.py")
BLOCKING = program("blocking_calls.py")
SLEEP_S = 0.5  # what sleeper_run asks for


def test_worker_threads_lines_get_the_cpu(threads_run: ProgramRun) -> None:
    _, profile = threads_run
    work = function_figures(profile, "work", THREADS)
    total = total_cpu(profile)
    share = cpu(work) / total
    print(f"\nworker function: {share:.1%} of all CPU ({describe(work)}; total {total:.3f}s)")
    assert share >= 0.80, f"work() got {share:.1%} of the CPU: {describe(work)}"
    hot = line_figures(profile, THREADS, "# worker:hot")
    assert hot["cpu_python_s"] >= 0.9 * cpu(hot), describe(hot)
    # The two workers hand the GIL to each other: that is the interpreter in pthread's
    # code, not a library (it was 5 % of the line, as native, on a loaded machine).
    assert hot["cpu_native_s"] <= 0.03 * cpu(hot), describe(hot)


def test_worker_threads_are_listed_with_their_names_and_cpu(threads_run: ProgramRun) -> None:
    """Both workers appear in `threads` under their names (they have ended before the
    profile is written), with their own CPU; the main thread has next to none."""
    _, profile = threads_run
    by_name = {t["name"]: t for t in profile["threads"]}
    assert len(by_name) == len(profile["threads"]), f"duplicate names: {profile['threads']}"
    for name in ("MainThread", "worker-0", "worker-1"):
        assert name in by_name, (
            f"no thread {name!r} among {[t['name'] for t in profile['threads']]}"
        )
    for name in ("worker-0", "worker-1"):
        assert by_name[name]["samples"] >= 5, describe(by_name[name])
    workers = cpu(by_name["worker-0"]) + cpu(by_name["worker-1"])
    assert workers >= 0.80 * total_cpu(profile)
    assert cpu(by_name["MainThread"]) < 0.05 * total_cpu(profile), describe(by_name["MainThread"])


def test_main_thread_join_line_gets_no_cpu_but_shows_wait(threads_run: ProgramRun) -> None:
    proc, profile = threads_run
    joined_s = stdout_json(proc)["join_s"]
    join = line_figures(profile, THREADS, "# main:join")
    total = total_cpu(profile)
    print(f"\njoin line: {describe(join)}; main thread measured {joined_s:.3f}s in join()")
    assert cpu(join) < 0.02 * total, f"join line got CPU: {describe(join)} of {total:.3f}s"
    assert join["wait_s"] >= 0.5 * joined_s, (
        f"join line shows {join['wait_s']:.3f}s wait; main thread waited {joined_s:.3f}s"
    )
    assert join["wait_s"] <= 1.3 * joined_s + 2 * profile["interval_s"], describe(join)


def test_sleeping_line_shows_the_sleep_as_wait_and_no_cpu(sleeper_run: ProgramRun) -> None:
    _, profile = sleeper_run
    line = line_figures(profile, SLEEPER, "# sleep:here")
    print(f"\nsleep({SLEEP_S}) line: {describe(line)}")
    assert abs(line["wait_s"] - SLEEP_S) <= 0.3 * SLEEP_S, describe(line)
    assert cpu(line) <= 0.02, f"a sleeping line got CPU: {describe(line)}"
    assert line["samples"] <= 2, describe(line)


@pytest.mark.parametrize(
    ("call", "text"),
    [
        ("time.sleep", "lambda: time.sleep(0.2)"),
        ("select.select", "lambda: select.select([r]"),
        ("os.read", "lambda: os.read(r, 100)"),
        ("socket.recv", "lambda: a.recv(100)"),
        ("queue.get timeout", "lambda: q.get(timeout=0.2)"),
        ("queue.get", "lambda: q.get(timeout=5.0)"),
    ],
)
def test_blocking_call_lines_show_their_wait(
    blocking_run: ProgramRun, call: str, text: str
) -> None:
    """blocking_calls.py blocks on each of these while another thread burns CPU: the line of
    the blocking call gets (most of) the time it blocked as wait, and no CPU to speak of."""
    proc, profile = blocking_run
    blocked_s = stdout_json(proc)[call]["elapsed_s"]
    line = line_figures(profile, BLOCKING, text)
    assert line["wait_s"] >= 0.5 * blocked_s, f"{call} blocked {blocked_s:.3f}s: {describe(line)}"
    assert cpu(line) <= 0.2 * blocked_s, f"{call} line got CPU: {describe(line)}"


CROWDED = program("crowded_cpu.py")


def test_waiting_for_a_cpu_is_not_the_programs_wait(runner: Runner) -> None:
    """A CPU-bound line that other processes keep off the CPUs for a good part of the time
    is runnable, not blocked on anything of its own: its wait is not the time it spent
    queued for a CPU (it was all of it before the kernel's run delay was taken off)."""
    proc, profile = runner.spyglass([CROWDED])
    assert profile is not None
    assert proc.returncode == 0, proc.stderr
    truth = stdout_json(proc)
    # The loop's time is shared between its test (time.thread_time() is a system call) and
    # its body, in proportions that vary run to run: the two lines are judged together.
    loop = line_figures(profile, CROWDED, "# crowded:loop")
    spin = line_figures(profile, CROWDED, "# crowded:spin")
    seen = f"loop {describe(loop)}; body {describe(spin)}"
    print(f"\ncrowded {seen}; queued for a CPU {truth['run_delay_s']:.3f}s")
    # Where the rest went, should the loop's lines fall short.
    elsewhere = [
        f"line {f['lineno']} {cpu(f):.3f}s"
        for f in profile["files"][str(CROWDED)]["lines"]
        if cpu(f) > 0 and f["lineno"] not in (loop["lineno"], spin["lineno"])
    ]
    threads = [f"{t['name']} {describe({**zero_figures(), **t})}" for t in profile["threads"]]
    seen += (
        f"; elsewhere in the file {elsewhere}; threads {threads}; dropped samples "
        f"{profile['dropped_samples']}; unattributed {describe(profile['unattributed'])}"
    )
    if truth["run_delay_s"] < 0.1:
        pytest.skip(f"the hogs kept the loop off the CPUs for only {truth['run_delay_s']:.3f}s")
    assert cpu(loop) + cpu(spin) >= 0.7 * truth["cpu_s"], seen
    assert loop["wait_s"] + spin["wait_s"] <= 0.25 * truth["run_delay_s"], seen


@pytest.mark.parametrize("mode", [[], ["--cpu-only"]], ids=["full", "cpu-only"])
def test_a_blocks_end_stays_on_the_line_that_blocked(runner: Runner, mode: list[str]) -> None:
    """A thread's wait is charged at each interval where it is found: one that had stopped
    blocking and was computing again by then had the end of its block charged to the
    computing line. A loop blocking 20 ms and computing 20 ms showed 20-30 % of its wait on
    the computing line; it now goes where the thread was last found blocked."""
    loop = program("block_then_compute.py")
    proc, profile = runner.spyglass([*mode, loop])
    assert profile is not None and proc.returncode == 0, proc.stderr
    truth = float(stdout_json(proc)["blocked_s"])
    block = line_figures(profile, loop, "# wait:block")
    compute = line_figures(profile, loop, "# wait:compute")
    print(f"\nblocked {truth:.3f} s: block {describe(block)}; compute {describe(compute)}")
    assert 0.9 * truth <= block["wait_s"] <= 1.1 * truth, (truth, describe(block))
    assert compute["wait_s"] <= 0.03 * truth, (truth, describe(compute))
