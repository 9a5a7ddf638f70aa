"""CPU found where it runs when a thread runs in short bursts that begin at the scheduler's
tick: tests/programs/gil_bursts.py, whose worker measures its own truth."""

from __future__ import annotations

import os

import pytest

from helpers import Runner, cpu, describe, function_figures, line_figures, program, stdout_json

BURSTS = program("gil_bursts.py")


def test_work_in_bursts_that_start_at_a_tick_is_found_where_it_runs(runner: Runner) -> None:
    """A POSIX CPU-time timer fires only at a scheduler tick that finds its thread running:
    a worker whose zlib.compress bursts began at a tick (given the CPU back after a spinning
    thread) and ended before the next was never found in them, and its Python loop got
    their CPU: 2x and 0.2x the truth. Threads that live a while get a perf task-clock event
    instead, which fires where its period ends."""
    from spyglass import _native

    if not _native.perf_clocks_allowed() or os.environ.get("SPYGLASS_CPU_CLOCK") == "posix":
        pytest.skip("perf task-clock events are not allowed here: POSIX timers keep the bias")
    proc, profile = runner.spyglass([BURSTS], options=["--cpu-only"])
    assert profile is not None and proc.returncode == 0, proc.stderr
    truth = stdout_json(proc)
    python = function_figures(profile, "transform", BURSTS)
    compress = line_figures(profile, BURSTS, "# bursts:compress")
    assert cpu(python) == pytest.approx(truth["transform"], rel=0.35), (describe(python), truth)
    assert cpu(compress) == pytest.approx(truth["compress"], rel=0.35), (describe(compress), truth)
