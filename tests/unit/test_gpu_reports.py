"""GPU figures in the readers: the schema, merging, diffing and the terminal report
(docs/gpu.md). The profiles are checked-in CPU fixtures given GPU figures here, so these
tests need no GPU and no fake NVML."""

from __future__ import annotations

import copy
from typing import Any, Callable

import pytest

from gpu_shapes import with_gpu
from helpers import assert_valid_profile
from spyglass.profile_model.diffing import diff_profiles
from spyglass.profile_model.io import ProfileError, validate
from spyglass.profile_model.merging import merge_profiles

Render = Callable[..., str]


def _lines(profile: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(p, x["lineno"]): x for p, e in profile["files"].items() for x in e["lines"]}


def test_a_profile_with_gpu_figures_is_valid(simple: dict[str, Any]) -> None:
    assert_valid_profile(with_gpu(simple))
    broken = with_gpu(simple)
    del broken["gpu_devices"]
    with pytest.raises(pytest.fail.Exception):
        assert_valid_profile(broken)


def test_merging_adds_gpu_time_and_keeps_utilisation(simple: dict[str, Any]) -> None:
    gpu = with_gpu(simple)
    merged = merge_profiles([gpu, copy.deepcopy(gpu)])
    assert_valid_profile(merged)
    assert merged["gpu_busy_s"] == pytest.approx(2 * gpu["gpu_busy_s"])
    assert merged["gpu_util_pct"] == pytest.approx(gpu["gpu_util_pct"])
    assert merged["gpu_peak_mem_mb"] == gpu["gpu_peak_mem_mb"]
    before, after = _lines(gpu), _lines(merged)
    for key, line in before.items():
        assert after[key]["gpu_util_pct"] == pytest.approx(line["gpu_util_pct"]), key
        assert after[key]["gpu_busy_s"] == pytest.approx(2 * line["gpu_busy_s"]), key
        assert after[key]["gpu_share"] == pytest.approx(line["gpu_share"]), key


def test_merging_with_a_profile_without_gpu(simple: dict[str, Any]) -> None:
    merged = merge_profiles([with_gpu(simple, per_process=False), copy.deepcopy(simple)])
    assert_valid_profile(merged)
    assert merged["gpu_profiled"] is True and merged["gpu_per_process"] is False
    # The CPU-only input ran its lines without the GPU being read: utilisation unchanged.
    for key, line in _lines(with_gpu(simple)).items():
        assert _lines(merged)[key]["gpu_util_pct"] == pytest.approx(line["gpu_util_pct"])
    assert "gpu_profiled" not in merge_profiles([simple, copy.deepcopy(simple)])


def test_diff_reads_profiles_with_gpu_figures(simple: dict[str, Any]) -> None:
    diff = diff_profiles(with_gpu(simple), with_gpu(simple))
    assert diff.lines and all(change.verdict == "noise" for change in diff.lines)


def test_terminal_shows_gpu_columns_only_with_gpu_figures(
    simple: dict[str, Any], render: Render
) -> None:
    assert "GPU%" not in render(simple)
    text = render(with_gpu(simple), width=120)
    heads = next(line for line in text.splitlines() if line.lstrip().startswith("line "))
    assert heads.split()[:7] == ["line", "Python", "native", "system", "wait", "GPU%", "GPU"]
    assert "100%" in text and "1.0 GB" in text  # the hottest line: 1000 MB of 2^20 bytes
    assert "Test GPU: " in text
    assert "whole device" not in text
    # Per line, not per thread: the threads table has no GPU columns.
    threads = text.split("\nThreads", 1)[1]
    heads = next(line for line in threads.splitlines() if "thread" in line.split())
    assert "GPU%" not in heads, heads
    for line in text.splitlines():
        assert len(line) <= 120, line


def test_terminal_says_when_figures_are_device_wide(simple: dict[str, Any], render: Render) -> None:
    text = render(with_gpu(simple, per_process=False), width=120)
    assert "whole device" in text and "other processes' work" in text


@pytest.mark.parametrize(
    ("break_it", "said"),
    [
        (lambda p: p.pop("gpu_devices"), "gpu_devices is missing"),
        (lambda p: p.update(gpu_util_pct="high"), "gpu_util_pct should be a percentage"),
        (lambda p: p.update(gpu_profiled=False), "gpu_profiled should be true"),
        (
            lambda p: next(iter(p["files"].values()))["lines"][0].pop("gpu_share"),
            ".lines[0].gpu_share is missing",
        ),
    ],
)
def test_broken_gpu_keys_are_refused_in_one_line(
    simple: dict[str, Any], break_it: Callable[[dict[str, Any]], object], said: str
) -> None:
    profile = with_gpu(simple)
    break_it(profile)
    with pytest.raises(ProfileError) as caught:
        validate(profile)
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_per_process_memory_timelines_add_up(simple: dict[str, Any]) -> None:
    first, second = with_gpu(simple), with_gpu(simple)
    second["started_at"] = first["started_at"] + 0.5
    merged = merge_profiles([first, second])
    # 100 MB from 0 s, 1000 MB from 1 s in each; the second runs half a second later.
    values = dict((t, v) for t, v in merged["gpu_timeline"])
    assert values[0.0] == 100 and values[0.5] == 200 and values[1.0] == 1100
    assert values[1.5] == 2000
    device_wide = merge_profiles([with_gpu(simple, per_process=False)] * 2)
    assert max(v for _, v in device_wide["gpu_timeline"]) == 1000
