"""The sample handler run directly, as bench/costs times it: each run must write a real
sample of the calling line (so the timing is of the handler's whole work, not of a path
that found nothing to do), and nothing must run when no profiler samples the thread."""

from __future__ import annotations

import sys
from pathlib import Path

import spyglass
from helpers import figures_at
from spyglass import _native

HERE = str(Path(__file__).resolve().parent)


def test_not_profiling_runs_nothing() -> None:
    assert _native.time_sample_handler(10) == (0, 0, 0)


def test_each_run_writes_a_sample_of_the_calling_line() -> None:
    spyglass.start(memory=False, program_path=HERE)
    try:
        timed_line = sys._getframe().f_lineno + 1
        calls, handler_ns, clock_ns = _native.time_sample_handler(100)
    finally:
        profile = spyglass.stop()
    assert calls == 100
    assert handler_ns > clock_ns > 0
    assert figures_at(profile, __file__, timed_line)["samples"] >= 100
