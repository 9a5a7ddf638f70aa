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


def test_runs_on_a_native_stack_record_the_binding_as_a_caller() -> None:
    """With native_context the handler unwinds from the timing call's own registers: once
    the control thread has compiled the extension's table, samples of the calling line
    carry native callers, and each run still writes its sample."""
    spyglass.start(memory=False, program_path=HERE)
    try:
        timed_line = sys._getframe().f_lineno + 1
        calls, _, _ = _native.time_sample_handler(600, native_context=True)
    finally:
        profile = spyglass.stop()
    assert calls == 600
    assert figures_at(profile, __file__, timed_line)["samples"] >= 600
    chains = [
        entry.get("callers", []) for stack in profile["stacks"] for entry in stack.get("native", [])
    ]
    assert any(chains), "no native sample of the timing call had a caller unwound"
