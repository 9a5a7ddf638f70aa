"""The view's processors, the other formats and the diff on profiles with memory figures."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from helpers import assert_valid_profile
from spyglass.cli import view
from spyglass.profile_model import memory_figures as memory
from spyglass.profile_model import queries as proc
from spyglass.profile_model import transforms
from spyglass.profile_model.diffing import diff_profiles, diff_to_json
from spyglass.profile_model.io import check_consistency

DEMO = "/home/ada/memdemo/mem_demo.py"
RECORDS = "/home/ada/memdemo/records.py"
FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "mem_simple.json"

Capture = pytest.CaptureFixture[str]


def _linenos(profile: dict[str, Any], path: str = DEMO) -> list[int]:
    return [int(x["lineno"]) for x in profile["files"][path]["lines"]]


def _function(profile: dict[str, Any], name: str, path: str = DEMO) -> dict[str, Any]:
    fn: dict[str, Any] = next(f for f in profile["files"][path]["functions"] if f["name"] == name)
    return fn


def _checked(profile: dict[str, Any]) -> dict[str, Any]:
    assert_valid_profile(profile)
    assert check_consistency(profile) == []
    return profile


def test_min_share_keeps_lines_that_only_allocated(
    mem: dict[str, Any], mem_cpu_only: dict[str, Any]
) -> None:
    # Line 24 allocated 16 MB (1.7% of the run's memory) without a CPU sample.
    kept = _checked(transforms.hide_idle_lines(mem, 1.0))
    assert 24 in _linenos(kept)
    # A CPU-only filter would have dropped it: the same run without memory figures does.
    assert 24 not in _linenos(transforms.hide_idle_lines(mem_cpu_only, 1.0))
    assert mem == json.loads(FIXTURE.read_text(encoding="utf-8")), "the input was changed"


def test_min_share_resums_memory_and_keeps_leaks(mem: dict[str, Any]) -> None:
    kept = _checked(transforms.hide_idle_lines(mem, 5.0))
    assert _linenos(kept) == [8, 9, 13, 17, 28]  # 13 has 2.2% of CPU, 4.2% of memory: a leak
    entry = kept["files"][DEMO]
    assert entry["mem_alloc_mb"] == pytest.approx(128.0 + 40.0 + 640.0)
    assert entry["leaks"] == mem["files"][DEMO]["leaks"]
    main = _function(kept, "main")  # lost line 24 and its 16 MB, kept line 28's wait
    assert main["mem_alloc_mb"] == 0.0 and main["mem_samples"] == 0
    assert main["mem_share"] == 0.0
    assert kept["mem_alloc_mb"] == mem["mem_alloc_mb"]  # the run's own figures never change


def test_top_n_ranks_lines_by_their_larger_share_of_cpu_or_memory(mem: dict[str, Any]) -> None:
    one = _checked(transforms.keep_top_lines(mem, 1))
    assert _linenos(one) == [17]  # 67% of memory beats line 9's 28% of CPU
    assert RECORDS not in one["files"]
    assert one["files"][DEMO]["leaks"] == []  # line 13 is gone, and its leak with it
    two = _checked(transforms.keep_top_lines(mem, 2))
    assert _linenos(two) == [9, 17]
    three = _checked(transforms.keep_top_lines(mem, 3))
    assert RECORDS in three["files"]  # records.py:4, 19% of CPU, before line 8's 13.5%
    shuffle = _function(two, "shuffle")
    assert shuffle["mem_alloc_mb"] == 640.0 and shuffle["copy_mb"] == 640.0
    assert shuffle["mem_python_fraction"] == pytest.approx(0.98)


def test_profile_only_keeps_memory_figures(mem: dict[str, Any]) -> None:
    kept = _checked(transforms.restrict_files(mem, ["records"], []))
    assert list(kept["files"]) == [RECORDS]
    assert kept["files"][RECORDS] == mem["files"][RECORDS]
    assert kept["footprint_timeline"] == mem["footprint_timeline"]
    assert all("mem_alloc_mb" in s for s in kept["stacks"])


def test_collapse_threads_sums_memory(mem: dict[str, Any]) -> None:
    collapsed = _checked(transforms.collapse_threads(mem))
    (thread,) = collapsed["threads"]
    assert thread["mem_alloc_mb"] == pytest.approx(950.0)
    assert thread["copy_mb"] == pytest.approx(650.0)


def test_lines_files_and_functions_with_memory_only_count(
    mem: dict[str, Any], mem_cpu_only: dict[str, Any]
) -> None:
    # A file whose only line allocated, without any CPU sample or wait.
    quiet = {
        "cpu_python_s": 0.0,
        "cpu_native_s": 0.0,
        "cpu_system_s": 0.0,
        "wait_s": 0.0,
        "samples": 0,
    }
    line = {"lineno": 3, "source": "x = bytearray(n)", **quiet, **memory.zero_line()}
    line.update(mem_alloc_mb=5.0, mem_samples=5, mem_python_fraction=1.0)
    function = {"name": "make", "first_lineno": 1, **quiet, **copy.deepcopy(line)}
    del function["lineno"], function["source"]
    path = "/home/ada/memdemo/quiet.py"
    mem["files"][path] = {**quiet, "mem_alloc_mb": 5.0, "copy_mb": 0.0, "leaks": []}
    mem["files"][path].update(lines=[line], functions=[function])
    assert path in [s.path for s in proc.file_share(mem)]
    assert [int(x["lineno"]) for x in proc.select_lines(mem, path)] == [3]
    assert [f["name"] for f in proc.top_functions(mem, path)] == ["make"]
    cpu_only = copy.deepcopy(mem_cpu_only)
    cpu_only["files"][path] = {**quiet, "lines": [dict(line, mem_alloc_mb=0.0)], "functions": []}
    assert path not in [s.path for s in proc.file_share(cpu_only)]


def test_top_lines_by_memory(mem: dict[str, Any]) -> None:
    top = proc.top_lines(mem, 3, by="memory")
    assert [(r.path, r.lineno) for r in top] == [(DEMO, 17), (DEMO, 8), (RECORDS, 4)]
    matter = {(r.path, r.lineno) for r in proc.lines_that_matter(mem, 1)}
    assert matter == {(DEMO, 9), (DEMO, 17), (DEMO, 13)}  # CPU, memory, the leak


@pytest.mark.parametrize("fmt", ["speedscope", "collapsed", "pstats", "json", "html", "terminal"])
def test_every_format_writes_a_memory_profile(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"out.{fmt}"
    assert view.main(["--format", fmt, "-o", str(out), str(FIXTURE)]) == 0
    assert out.stat().st_size > 100


def test_json_format_passes_memory_through(tmp_path: Path) -> None:
    out = tmp_path / "small.json"
    args = ["--format", "json", "--top", "2", "--collapse-threads", "-o", str(out), str(FIXTURE)]
    assert view.main(args) == 0
    small = _checked(json.loads(out.read_text(encoding="utf-8")))
    assert small["memory_profiled"] is True
    assert small["footprint_timeline"] == json.loads(FIXTURE.read_text())["footprint_timeline"]
    assert small["threads"][0]["mem_alloc_mb"] == pytest.approx(950.0)


def test_speedscope_and_collapsed_stay_cpu(capsys: Capture) -> None:
    assert view.main(["--format", "collapsed", str(FIXTURE)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.rsplit(" ", 1)[1].isdigit() for line in lines)
    # The line that only allocated has no CPU: it is in no CPU stack.
    assert not any("main:24" in line for line in lines)


# --------------------------------------------------------------------------- diff


def test_diff_adds_memory_changes_per_line(mem: dict[str, Any]) -> None:
    after = copy.deepcopy(mem)
    line = next(x for x in after["files"][DEMO]["lines"] if x["lineno"] == 24)
    line["mem_alloc_mb"] = 48.0
    after["mem_alloc_mb"] += 32.0
    diff = diff_profiles(mem, after)
    by_line = {c.after_lineno: c for c in diff.lines}
    assert by_line[24].mem_delta_mb == 32.0  # a line without CPU is compared for its memory
    assert (by_line[24].before_mem_mb, by_line[24].after_mem_mb) == (16.0, 48.0)
    assert by_line[24].delta_s == 0.0 and by_line[24].verdict == "noise"
    assert by_line[17].mem_delta_mb == 0.0
    assert diff.total.mem_delta_mb == 32.0
    doc = diff_to_json(diff, mem, after)
    assert doc["total"]["mem_delta_mb"] == 32.0
    assert all("mem_delta_mb" in c for c in doc["lines"])


def test_diff_without_memory_on_both_sides_has_no_memory_keys(
    mem: dict[str, Any], mem_cpu_only: dict[str, Any]
) -> None:
    cpu = mem_cpu_only
    diff = diff_profiles(cpu, mem)
    assert all(c.mem_delta_mb is None for c in [diff.total, *diff.lines, *diff.functions])
    assert 24 not in {c.after_lineno for c in diff.lines}  # no CPU on either side
    doc = diff_to_json(diff, cpu, mem)
    assert not any("mem_delta_mb" in c for c in [doc["total"], *doc["lines"]])
