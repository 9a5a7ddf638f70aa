"""Per-line allocation figures do not depend on the mix of sizes (issue 12, item 2):
tests/programs/mem_mix_truth.py allocates 100 B to 100 MB from interleaved lines and counts
each line's bytes itself. At default settings every line with at least 2 % of the bytes is
within 15 % of its truth, and a line's Python share is the share of its bytes that went
through Python's allocator (bytes objects and lists of ints: Python; NumPy buffers: not).

Measured spread over repeated runs (docs/memory-profiling.md): the 2.7 % line (10 KB
blocks) is the noisiest, a few percent; the 100 KB line (1.4 %) is reported but not held to
the bar; lines of big blocks are exact to the byte, every block being sampled.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers import Runner, line_figures, program

MIX = program("mem_mix_truth.py")
MARKS = {
    "tiny": "LINE_TINY",
    "small": "LINE_SMALL",
    "medium": "LINE_MEDIUM",
    "keep": "LINE_KEEP",
    "ints": "LINE_INTS",
    "big": "LINE_BIG",
    "huge": "LINE_HUGE",
}
PYTHON = ("tiny", "small", "medium", "keep", "ints")
NATIVE = ("big", "huge")


@pytest.fixture(scope="module")
def mix_run(make_runner: Any) -> tuple[dict[str, int], dict[str, Any]]:
    runner: Runner = make_runner("mem_mix")
    calibrated = runner.python([MIX, "--calibrate"])
    assert calibrated.returncode == 0, calibrated.stderr
    truth_file = runner.new_path("truth")
    proc, profile = runner.spyglass([MIX, truth_file, calibrated.stdout.strip()])
    assert proc.returncode == 0, proc.stderr
    truth: dict[str, int] = json.loads(Path(truth_file).read_text())
    return truth, profile


def test_every_line_with_two_percent_of_the_bytes_is_within_15_percent(
    mix_run: tuple[dict[str, int], dict[str, Any]],
) -> None:
    truth, profile = mix_run
    total = sum(truth.values())
    checked = []
    problems = []
    for name, mark in MARKS.items():
        if truth[name] < 0.02 * total:
            continue
        counted = line_figures(profile, MIX, mark)["mem_alloc_mb"] * 2**20
        checked.append(name)
        error = counted / truth[name] - 1
        if abs(error) > 0.15:
            problems.append(f"{name}: {counted / 2**20:.2f} MiB, truth {truth[name] / 2**20:.2f}")
    assert len(checked) >= 5, f"the program's mix changed: only {checked} hold 2 % of bytes"
    assert not problems, "\n".join(problems)


def test_python_share_is_the_share_of_bytes_through_pythons_allocator(
    mix_run: tuple[dict[str, int], dict[str, Any]],
) -> None:
    _, profile = mix_run
    for name in PYTHON:
        f = line_figures(profile, MIX, MARKS[name])
        if f["mem_alloc_mb"] > 0:
            assert f["mem_python_fraction"] >= 0.9, f"{name}: {f['mem_python_fraction']:.2f}"
    for name in NATIVE:
        f = line_figures(profile, MIX, MARKS[name])
        assert f["mem_python_fraction"] <= 0.05, f"{name}: {f['mem_python_fraction']:.2f}"


def test_the_runs_total_is_the_sum_of_what_it_allocated(
    mix_run: tuple[dict[str, int], dict[str, Any]],
) -> None:
    """Gross bytes allocated (memray's figure): at least the program's own count, which
    leaves out the interpreter's work around it (sys.getsizeof's bound methods, the sums)."""
    truth, profile = mix_run
    total = sum(truth.values()) / 2**20
    assert profile["mem_alloc_mb"] >= 0.97 * total
