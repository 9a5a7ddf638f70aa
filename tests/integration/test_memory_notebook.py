"""Memory profiling started with spyglass.start() in an interpreter that is already running:
inside an IPython kernel (driven through jupyter_client, as a notebook front end drives it),
and in a plain script that imported numpy and allocated before start().

Every `_mb` figure is in MiB (2**20 bytes).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from jupyter_kernel import Kernel

from helpers import (
    Figures,
    Profile,
    Runner,
    line_figures,
    load_profile,
    program,
    stdout_json,
)

LATE_START = program("mem_api_late_start.py")
# What a cell's code is compiled as: "<ipython-input-N-…>" (older IPython) or a file in
# the kernel's temporary directory, "…/ipykernel_PID/HASH.py".
CELL_FILE = re.compile(r"<ipython-input-|ipykernel_\d+[/\\]")

ALLOC_CELL = """\
# A cell whose third line allocates 64 MiB and keeps it.
size = 64 << 20
kept = bytearray(size)  # nb:alloc
"""
ALLOC_LINENO = 3  # in its cell


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, child_env: dict[str, str]) -> Iterator[Kernel]:
    k = Kernel(tmp_path_factory.mktemp("kernel"), child_env)
    try:
        yield k
    finally:
        k.close()


def cell_line(profile: Profile, marker: str, lineno: int) -> tuple[str, Figures]:
    """The line of a cell: by its source text where the profile has it, else the line
    `lineno` of the one cell file that has such a line."""
    by_source = [
        (path, line)
        for path, entry in profile["files"].items()
        for line in entry["lines"]
        if marker in (line.get("source") or "")
    ]
    if by_source:
        assert len(by_source) == 1, f"{marker!r} on several lines: {by_source}"
        return by_source[0]
    cells = [
        (path, line)
        for path, entry in profile["files"].items()
        if CELL_FILE.search(path)
        for line in entry["lines"]
        if line["lineno"] == lineno
    ]
    assert len(cells) == 1, (
        f"no single cell line {lineno} with {marker!r}: {cells}; files: {sorted(profile['files'])}"
    )
    return cells[0]


def test_start_in_a_running_kernel_sees_a_cells_allocation(kernel: Kernel, tmp_path: Path) -> None:
    outfile = tmp_path / "notebook.json"
    kernel.run("import numpy\nimport spyglass\nwarm = [bytearray(1000) for _ in range(10000)]")
    kernel.run("spyglass.start()")
    kernel.run(ALLOC_CELL)
    printed = kernel.run(
        f"profile = spyglass.stop(outfile={str(outfile)!r})\nprint(profile['memory_profiled'])"
    )
    assert printed.strip() == "True", printed
    profile = load_profile(outfile)
    path, line = cell_line(profile, "nb:alloc", ALLOC_LINENO)
    alloc = line.get("mem_alloc_mb", 0)
    assert abs(alloc - 64) <= 0.05 * 64, f"{path}:{line['lineno']}: {alloc} MiB of 64"
    assert profile["max_footprint_mb"] >= 0.95 * 64


def test_the_kernel_lives_on_after_stop(kernel: Kernel) -> None:
    """Profiling again in the same kernel, and working after it: nothing was left broken.
    (It imports spyglass itself: a parallel run may give it a kernel of its own.)"""
    kernel.run(
        "import spyglass\nspyglass.start()\nagain = bytearray(8 << 20)\nsecond = spyglass.stop()"
    )
    printed = kernel.run("print(second['memory_profiled'], len(bytes(again)) == 8 << 20)")
    assert printed.split() == ["True", "True"], printed


# --------------------------------------------------------------------------- plain script


def test_start_after_numpy_and_allocations_leaves_no_negative_footprint(runner: Runner) -> None:
    outfile = runner.new_path("late")
    proc = runner.python([LATE_START, outfile])
    assert proc.returncode == 0, f"exit status {proc.returncode}:\n{proc.stderr}"
    assert stdout_json(proc) == {"memory_profiled": True}
    profile = load_profile(outfile)
    negative = [
        f"{k} {profile[k]}"
        for k in ("max_footprint_mb", "mem_alloc_mb", "mem_free_mb")
        if profile[k] < 0
    ]
    negative += [f"footprint at {t} s: {mb}" for t, mb in profile["footprint_timeline"] if mb < 0]
    for path, entry in profile["files"].items():
        for line in entry["lines"]:
            where = f"{path}:{line['lineno']}"
            if line.get("mem_peak_mb", 0) < 0:
                negative.append(f"{where} mem_peak_mb {line['mem_peak_mb']}")
            negative += [
                f"{where} at {t} s: {mb}" for t, mb in line.get("mem_timeline", []) if mb < 0
            ]
    assert not negative, "negative footprints:\n  " + "\n  ".join(negative)
    after = line_figures(profile, LATE_START, "late:alloc")
    assert abs(after.get("mem_alloc_mb", 0) - 64) <= 0.05 * 64, after
