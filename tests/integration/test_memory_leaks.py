"""The leak suite (issue 12, item 3): tests/programs/mem_leak_suite.py's cases under
`spyglass run` at default settings. Exactly the lines marked "LEAK" are reported as leaks:
none in an import of a big library, temporaries of any size, a table built then dropped, a
cache filled once, a structure built in one go just before the end or cyclic garbage
awaiting a full collection; the growth of a global list, a small steady leak next to big
churn, a leak in a worker thread, one in C code, one in a server's request threads that
then idled before its shutdown and one in a loop whose other line allocates nothing all are.
A leak's live bytes at the end are what the program says it kept; the line holding the
most at the footprint's peak is reported so.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    RUN_TIMEOUT_S,
    Runner,
    c_compiler_argv,
    file_entry,
    line_figures,
    program,
    stdout_json,
)

SUITE = program("mem_leak_suite.py")
EXT_SOURCE = Path(__file__).resolve().parent.parent / "ext" / "alloc_paths.c"
NOT_LEAKS = (
    "import",
    "import_then_little",
    "temporaries",
    "build_then_drop",
    "cache_once",
    "cache_filled_by_requests",
    "built_in_threads",
    "build_at_end",
    "cyclic_garbage",
)
LEAKS = (
    "global_growth",
    "small_leak_big_churn",
    "thread_leak",
    "native_leak",
    "lone_line_leak",
    "leak_then_idle",
    "leak_in_quiet_loop",
)
# Live bytes are estimates from samples: measured spread (docs/memory-profiling.md) is a few
# percent for these sizes.
LIVE_TOLERANCE = 0.15


@pytest.fixture(scope="module")
def ext_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("leak_ext")
    target = dest / f"alloc_paths{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
    cmd = [*c_compiler_argv("tests/ext/alloc_paths.c"), "-O1", "-fno-builtin", "-shared"]
    cmd += ["-fPIC", f"-I{sysconfig.get_paths()['include']}", str(EXT_SOURCE), "-o", str(target)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if done.returncode != 0:
        pytest.fail(f"building {shlex.join(cmd)} failed:\n{done.stderr}", pytrace=False)
    return dest


def run_case(make_runner: Any, ext_dir: Path, case: str) -> tuple[dict[str, Any], Any]:
    runner: Runner = make_runner(f"leak_{case}")
    proc, profile = runner.spyglass([SUITE, case, ext_dir])
    assert proc.returncode == 0, f"case {case} failed under spyglass:\n{proc.stderr}"
    assert profile is not None
    return stdout_json(proc), profile


def reported(profile: Any) -> list[tuple[str, int]]:
    return [
        (Path(path).name, int(leak["lineno"]))
        for path, entry in profile["files"].items()
        for leak in entry.get("leaks") or []
    ]


def marked_lines() -> dict[int, str]:
    with open(SUITE, encoding="utf-8") as fh:
        return {n: line for n, line in enumerate(fh, start=1) if "# LEAK" in line}


@pytest.mark.parametrize("case", NOT_LEAKS)
def test_no_false_leaks(make_runner: Any, ext_dir: Path, case: str) -> None:
    _, profile = run_case(make_runner, ext_dir, case)
    assert reported(profile) == [], f"{case}: reported as leaks: {reported(profile)}"


def test_no_false_leak_on_a_loaded_cpu(make_runner: Any, ext_dir: Path) -> None:
    """A structure built in one go on a CPU another process keeps busy: the thread is
    preempted again and again while it builds. Time off the CPU alone cut the one execution
    into many, and the line was called a leak; only blocking of its own accord ends one."""
    cpu = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        os.sched_setaffinity(hog.pid, {cpu})
        os.sched_setaffinity(0, {cpu})  # the run inherits it
        _, profile = run_case(make_runner, ext_dir, "build_at_end")
    finally:
        os.sched_setaffinity(0, before)
        hog.kill()
        hog.wait()
    assert reported(profile) == [], f"reported as leaks: {reported(profile)}"


@pytest.mark.parametrize("case", LEAKS)
def test_every_leak_is_reported_and_nothing_else(
    make_runner: Any, ext_dir: Path, case: str
) -> None:
    truth, profile = run_case(make_runner, ext_dir, case)
    leaks = reported(profile)
    expected = [n for n, line in marked_lines().items() if f"def case_{case}" in _function_of(n)]
    assert len(expected) == 1
    figures = figures_by_line(profile, expected[0])
    assert leaks == [(SUITE.name, expected[0])], (
        f"{case}: expected line {expected}, got {leaks}; the line: {_evidence(figures)}, "
        f"the run: {profile['elapsed_s']:.2f} s, ends {profile['footprint_timeline'][-1:]}"
    )
    live = figures["mem_live_end_mb"] * 2**20
    assert live == pytest.approx(truth["kept_bytes"], rel=LIVE_TOLERANCE), (
        f"{case}: live at the end {live / 2**20:.1f} MiB, kept {truth['kept_bytes'] / 2**20:.1f}"
    )
    leak = next(iter(file_entry(profile, SUITE)["leaks"]))
    assert leak["likelihood"] >= 0.95 and leak["rate_mb_s"] > 0


def test_what_was_live_at_the_peak(make_runner: Any, ext_dir: Path) -> None:
    truth, profile = run_case(make_runner, ext_dir, "peak")
    assert reported(profile) == []
    table = line_figures(profile, SUITE, "# PEAK")
    kept = line_figures(profile, SUITE, "# held at the peak")
    assert table["mem_live_at_peak_mb"] * 2**20 == pytest.approx(truth["table_bytes"], rel=0.15)
    assert table["mem_live_end_mb"] == pytest.approx(0.0, abs=1.0)
    assert kept["mem_live_at_peak_mb"] * 2**20 == pytest.approx(truth["kept_bytes"], rel=0.05)
    assert kept["mem_live_end_mb"] * 2**20 == pytest.approx(truth["kept_bytes"], rel=0.05)


def _evidence(figures: dict[str, Any]) -> str:
    """What a line's leak verdict rests on, for a failure's message."""
    series = figures.get("mem_timeline") or []
    keys = ("mem_live_end_mb", "mem_alloc_mb", "mem_freed_mb", "mem_samples")
    shown = {k: figures.get(k) for k in keys}
    return f"{shown}, footprint at its samples {series[:2]} ... {series[-2:]}"


def _function_of(lineno: int) -> str:
    """The `def` line of the function that holds `lineno`."""
    with open(SUITE, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    for n in range(lineno - 1, -1, -1):
        if lines[n].startswith("def "):
            return lines[n]
    return ""


def figures_by_line(profile: Any, lineno: int) -> dict[str, Any]:
    for entry in file_entry(profile, SUITE)["lines"]:
        if entry["lineno"] == lineno:
            return dict(entry)
    pytest.fail(f"line {lineno} of {SUITE.name} is not in the profile", pytrace=False)
    raise AssertionError  # unreachable
