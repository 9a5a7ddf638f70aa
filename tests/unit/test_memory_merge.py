"""Merging memory profiles (docs/profile-format.md, "Merging"), and the timeline arithmetic
of spyglass.profile_model.memory_figures that it rests on."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from helpers import assert_valid_profile
from spyglass.cli.merge import main
from spyglass.profile_model import memory_figures as memory
from spyglass.profile_model.io import check_consistency, load_profile
from spyglass.profile_model.merging import merge_profiles

DEMO = "/home/ada/memdemo/mem_demo.py"
RECORDS = "/home/ada/memdemo/records.py"

Capture = pytest.CaptureFixture[str]


def _line(profile: dict[str, Any], lineno: int, path: str = DEMO) -> dict[str, Any]:
    line: dict[str, Any] = next(x for x in profile["files"][path]["lines"] if x["lineno"] == lineno)
    return line


def _at(points: list[list[float]], t: float) -> float:
    """The value of a step function at ``t`` (0 before its first point)."""
    value = 0.0
    for pt, v in points:
        if pt <= t:
            value = v
    return value


# --------------------------------------------------------------------------- timelines


def test_steps_add_up_in_one_clock() -> None:
    a = memory.Series([[0.0, 1.0], [2.0, 3.0]], 0.0, 10.0)
    b = memory.Series([[0.0, 10.0], [1.0, 20.0]], 0.5, 10.0)  # started 0.5 s later
    assert memory.sum_steps([a, b]) == [[0.0, 1.0], [0.5, 11.0], [1.5, 21.0], [2.0, 23.0]]


def test_a_finished_input_stops_counting() -> None:
    first = memory.Series([[0.0, 5.0]], 0.0, 1.0)  # ran from 0 to 1
    second = memory.Series([[0.0, 2.0], [1.0, 4.0]], 2.0, 1.0)  # from 2 to 3
    assert memory.sum_steps([first, second]) == [[0.0, 5.0], [1.0, 0.0], [2.0, 2.0], [3.0, 4.0]]
    # Its last point is kept however late it came; only the result's end is not extended.
    assert memory.sum_steps([first]) == [[0.0, 5.0]]


def test_reduce_keeps_the_ends_and_the_extremes() -> None:
    points = [[i / 10, 0.0] for i in range(300)]
    points[123][1] = 50.0
    points[250][1] = -7.0
    reduced = memory.reduce(points, 10)
    assert len(reduced) <= 10
    assert reduced[0] == points[0] and reduced[-1] == points[-1]
    assert points[123] in reduced and points[250] in reduced
    assert memory.reduce(points[:5], 10) == points[:5]
    assert len(memory.reduce(points, memory.FOOTPRINT_POINTS)) == memory.FOOTPRINT_POINTS


def test_resample_is_a_time_weighted_mean() -> None:
    assert memory.resample([[1.0, 10.0], [3.0, 0.0]], 4, 4.0) == [0.0, 10.0, 10.0, 0.0]
    assert memory.resample([[0.5, 8.0]], 2, 2.0) == [4.0, 8.0]
    assert memory.resample([], 8, 4.0) == []


# --------------------------------------------------------------------------- merging


@pytest.fixture
def later(mem: dict[str, Any]) -> dict[str, Any]:
    """A second run of mem_demo.py that started 1 s later, leaked more from line 13 (with
    less of it through Python's allocator), leaked at line 24 too and peaked higher."""
    other = copy.deepcopy(mem)
    other["started_at"] += 1.0
    line = _line(other, 13)
    line.update(mem_alloc_mb=60.0, mem_python_fraction=0.5, mem_avg_mb=1.5, mem_peak_mb=60.0)
    line["mem_timeline"] = [[0.5, 30.0], [1.0, 60.0]]
    other["files"][DEMO]["mem_alloc_mb"] += 20.0
    other["mem_alloc_mb"] += 20.0
    other["files"][DEMO]["leaks"] = [
        {"lineno": 13, "likelihood": 0.96, "rate_mb_s": 5.0},
        {"lineno": 24, "likelihood": 0.995, "rate_mb_s": 1.0},
    ]
    other.update(max_footprint_mb=400.0, max_footprint_lineno=13)
    return other


def test_two_memory_profiles_add_up(mem: dict[str, Any], later: dict[str, Any]) -> None:
    originals = copy.deepcopy([mem, later])
    merged = merge_profiles([mem, later], names=["a.json", "b.json"])
    assert [mem, later] == originals, "merging changed its inputs"
    assert_valid_profile(merged)
    assert check_consistency(merged) == []
    assert merged["memory_profiled"] is True
    assert merged["elapsed_s"] == pytest.approx(5.2)  # 4.2 s each, 1 s apart
    for key in ("mem_alloc_mb", "mem_free_mb", "copy_mb", "native_thread_alloc_mb"):
        assert merged[key] == pytest.approx(mem[key] + later[key]), key
    assert merged["mem_samples"] == mem["mem_samples"] + later["mem_samples"]
    python = sum(p["mem_alloc_mb"] * p["mem_python_fraction"] for p in (mem, later))
    assert merged["mem_python_fraction"] == pytest.approx(python / merged["mem_alloc_mb"])
    assert merged["copy_mb_s"] == pytest.approx(merged["copy_mb"] / 5.2)
    assert merged["memory_window_mb"] == 1.0 and merged["copy_window_mb"] == 2.0
    # The larger peak wins, with the line that set it.
    assert merged["max_footprint_mb"] == 400.0
    assert (merged["max_footprint_file"], merged["max_footprint_lineno"]) == (DEMO, 13)


def test_lines_combine_their_memory(mem: dict[str, Any], later: dict[str, Any]) -> None:
    merged = merge_profiles([mem, later])
    a, b, m = _line(mem, 13), _line(later, 13), _line(merged, 13)
    assert m["mem_alloc_mb"] == pytest.approx(100.0)
    assert m["mem_samples"] == a["mem_samples"] + b["mem_samples"]
    assert m["mem_python_fraction"] == pytest.approx((40 * 0.97 + 60 * 0.5) / 100)
    assert m["mem_avg_mb"] == pytest.approx((40 * 1.0 + 60 * 1.5) / 100)  # alloc-weighted
    assert m["mem_peak_mb"] == 60.0  # a peak, not a sum
    assert m["mem_share"] == pytest.approx(100.0 / merged["mem_alloc_mb"])
    copy_line = _line(merged, 17)
    assert copy_line["copy_mb"] == pytest.approx(1280.0)
    assert copy_line["copy_mb_s"] == pytest.approx(1280.0 / merged["elapsed_s"])
    function = next(f for f in merged["files"][DEMO]["functions"] if f["name"] == "remember")
    assert function["mem_alloc_mb"] == pytest.approx(80.0)  # 40 + 40: `later` kept its own


def test_timelines_are_shifted_and_summed(mem: dict[str, Any], later: dict[str, Any]) -> None:
    merged = merge_profiles([mem, later])
    ours, theirs = _line(mem, 13)["mem_timeline"], _line(later, 13)["mem_timeline"]
    summed = _line(merged, 13)["mem_timeline"]
    assert len(summed) <= memory.LINE_POINTS
    # `later` counts from its own start, 1 s into the result's clock.
    for t in (0.95, 1.2, 1.6, 2.0, 3.5):
        assert _at(summed, t) == pytest.approx(_at(ours, t) + _at(theirs, t - 1.0)), t
    footprint = merged["footprint_timeline"]
    assert len(footprint) <= memory.FOOTPRINT_POINTS
    assert footprint == sorted(footprint)
    a, b = mem["footprint_timeline"], later["footprint_timeline"]
    for t in (0.05, 0.5, 1.05, 3.0):  # where neither timeline lost a point to the reduction
        assert _at(footprint, t) == pytest.approx(_at(a, t) + _at(b, t - 1.0), abs=1e-6), t


def test_leaks_are_united(mem: dict[str, Any], later: dict[str, Any]) -> None:
    merged = merge_profiles([mem, later])
    leaks = merged["files"][DEMO]["leaks"]
    assert [x["lineno"] for x in leaks] == [24, 13]  # by likelihood, descending
    assert leaks[1]["likelihood"] == pytest.approx(0.981)  # the higher one
    assert leaks[1]["rate_mb_s"] == pytest.approx(40.0 / 2.3 + 5.0)  # rates add up
    assert merged["files"][RECORDS]["leaks"] == []


def test_merging_a_memory_profile_with_itself(mem: dict[str, Any]) -> None:
    merged = merge_profiles([mem, mem])
    assert check_consistency(merged) == []
    line = _line(merged, 8)
    assert line["mem_timeline"] == [[t, 2 * v] for t, v in _line(mem, 8)["mem_timeline"]]
    assert line["mem_python_fraction"] == pytest.approx(_line(mem, 8)["mem_python_fraction"])
    threads = merged["threads"]  # kept apart, one per input
    assert [t["mem_alloc_mb"] for t in threads] == [t["mem_alloc_mb"] for t in mem["threads"]] * 2
    assert merged["stacks"][0]["mem_alloc_mb"] == 2 * mem["stacks"][0]["mem_alloc_mb"]
    assert merged["files"][DEMO]["copy_mb"] == 2 * mem["files"][DEMO]["copy_mb"]


def test_memory_and_cpu_only_profiles_merge(mem: dict[str, Any], simple: dict[str, Any]) -> None:
    merged = merge_profiles([simple, mem])
    assert_valid_profile(merged)
    assert check_consistency(merged) == []
    assert merged["memory_profiled"] is True
    assert merged["mem_alloc_mb"] == mem["mem_alloc_mb"]  # the CPU-only run adds nothing
    cpu_only = merged["files"]["/home/ada/demo/simple.py"]
    assert cpu_only["mem_alloc_mb"] == 0.0 and cpu_only["leaks"] == []
    assert all(line["mem_timeline"] == [] for line in cpu_only["lines"])
    assert merged["threads"][0]["mem_alloc_mb"] == 0.0  # simple's MainThread


def test_cpu_only_profiles_merge_without_memory_keys(simple: dict[str, Any]) -> None:
    old = dict(simple, schema_version=1)
    del old["memory_profiled"]
    merged = merge_profiles([simple, old])  # a version 1 input is read as version 2
    assert merged["memory_profiled"] is False
    assert not set(memory.TOP_KEYS) & set(merged)
    line = merged["files"]["/home/ada/demo/simple.py"]["lines"][0]
    assert not set(memory.LINE_KEYS) & set(line)
    assert_valid_profile(merged)


def test_processes_of_a_cpu_only_input_get_zero_memory(
    mem: dict[str, Any], simple: dict[str, Any]
) -> None:
    simple["processes"] = [{"pid": 4242, "argv": ["simple.py"]}]
    merged = merge_profiles([mem, simple])
    assert merged["processes"] == [
        {
            "pid": 4242,
            "argv": ["simple.py"],
            "max_footprint_mb": 0.0,
            "mem_alloc_mb": 0.0,
            "copy_mb": 0.0,
        }
    ]
    assert_valid_profile(merged)


def test_spyglass_merge_writes_a_valid_memory_profile(
    tmp_path: Path, later: dict[str, Any], capsys: Capture
) -> None:
    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "mem_simple.json"
    other = tmp_path / "later.json"
    other.write_text(json.dumps(later), encoding="utf-8")
    out = tmp_path / "both.json"
    assert main([str(fixture), str(other), "-o", str(out)]) == 0
    merged = load_profile(out)
    assert_valid_profile(merged)
    assert merged["mem_alloc_mb"] == pytest.approx(950.0 + 970.0)
    assert capsys.readouterr().err == ""
