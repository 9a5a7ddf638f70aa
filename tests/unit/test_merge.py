"""Merging profiles: spyglass.profile_model.merging and `spyglass merge`."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from helpers import assert_valid_profile
from spyglass.cli.merge import main
from spyglass.profile_model.io import TIMES_KEYS, ProfileError, check_consistency
from spyglass.profile_model.merging import default_labels, merge_profiles

Capture = pytest.CaptureFixture[str]


def _doubled(merged: dict[str, Any], original: dict[str, Any]) -> None:
    for key in TIMES_KEYS:
        assert merged[key] == pytest.approx(2 * original[key]), key


def _stacks_by_frames(profile: dict[str, Any]) -> dict[tuple[Any, ...], dict[str, Any]]:
    frames = profile["frames"]
    return {
        tuple(
            (frames[i]["file"], frames[i]["function"], frames[i]["lineno"]) for i in s["frames"]
        ): s
        for s in profile["stacks"]
    }


@pytest.mark.parametrize("fixture", ["simple", "multifile"])
def test_merging_a_profile_with_itself_doubles_everything(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    profile = request.getfixturevalue(fixture)
    original = copy.deepcopy(profile)
    merged = merge_profiles([profile, profile], names=["a.json", "b.json"])
    assert profile == original
    assert_valid_profile(merged)
    assert check_consistency(merged) == []
    _doubled(merged, profile)
    _doubled(merged["unattributed"], profile["unattributed"])
    assert list(merged["files"]) == list(profile["files"])
    for path, entry in profile["files"].items():
        into = merged["files"][path]
        _doubled(into, entry)
        assert [ln["lineno"] for ln in into["lines"]] == [ln["lineno"] for ln in entry["lines"]]
        for a, b in zip(into["lines"], entry["lines"]):
            _doubled(a, b)
            assert a["source"] == b["source"]
        for a, b in zip(into["functions"], entry["functions"]):
            assert (a["name"], a["first_lineno"]) == (b["name"], b["first_lineno"])
            _doubled(a, b)
    assert merged["frames"] == profile["frames"]
    merged_stacks, stacks = _stacks_by_frames(merged), _stacks_by_frames(profile)
    assert merged_stacks.keys() == stacks.keys()
    for key, stack in stacks.items():
        _doubled(merged_stacks[key], stack)
    # the same run twice: it overlaps itself entirely
    assert merged["elapsed_s"] == profile["elapsed_s"]
    assert merged["elapsed_s_total"] == pytest.approx(2 * profile["elapsed_s"])
    # threads stay apart, labelled by their input
    assert len(merged["threads"]) == 2 * len(profile["threads"])
    name = profile["threads"][0]["name"]
    assert [t["name"] for t in merged["threads"]][:: len(profile["threads"])] == [
        f"a: {name}",
        f"b: {name}",
    ]
    for key in ("program", "argv", "exit_status", "started_at", "interval_s", "python_version"):
        assert merged[key] == profile[key]


def test_sources_list_every_input(simple: dict[str, Any], multifile: dict[str, Any]) -> None:
    merged = merge_profiles([simple, multifile], names=["x/simple.json", "y/multi.json"])
    assert_valid_profile(merged)
    assert check_consistency(merged) == []
    assert [s["label"] for s in merged["sources"]] == ["simple", "multi"]
    first = merged["sources"][0]
    assert first["file"] == "x/simple.json"
    for key in ("program", "argv", "started_at", "exit_status", "elapsed_s", "samples"):
        assert first[key] == simple[key]
    assert merged["program"] == "simple.py + -m imgtool"
    assert merged["argv"] == []
    assert set(merged["files"]) == set(simple["files"]) | set(multifile["files"])
    # frames resolved through each input's own table
    combined = {**_stacks_by_frames(simple), **_stacks_by_frames(multifile)}
    assert _stacks_by_frames(merged).keys() == combined.keys()
    assert len(merged["frames"]) == len(simple["frames"]) + len(multifile["frames"]) - 3
    # merging merged profiles flattens the sources
    again = merge_profiles([merged, simple], ["all", "one"])
    assert [s["label"] for s in again["sources"]] == ["all/simple", "all/multi", "one"]
    assert check_consistency(again) == []


def test_elapsed_is_the_union_of_the_runs(simple: dict[str, Any]) -> None:
    later = dict(simple, started_at=simple["started_at"] + 100.0)
    overlapping = dict(simple, started_at=simple["started_at"] + 1.0)
    assert merge_profiles([simple, later])["elapsed_s"] == pytest.approx(2 * simple["elapsed_s"])
    union = merge_profiles([simple, overlapping])
    assert union["elapsed_s"] == pytest.approx(simple["elapsed_s"] + 1.0)
    assert union["started_at"] == simple["started_at"]


def test_what_inputs_disagree_on(simple: dict[str, Any]) -> None:
    other = dict(simple, exit_status=3, python_version="3.12.1", interval_s=0.005)
    merged = merge_profiles([simple, other])
    assert merged["exit_status"] == 3
    assert merged["python_version"] == "3.11.7, 3.12.1"
    assert merged["interval_s"] == 0.005
    assert_valid_profile(merged)


def test_merge_refuses_other_versions_and_other_files(
    simple: dict[str, Any], fixtures_dir: Path
) -> None:
    future = json.loads((fixtures_dir / "future_version.json").read_text())
    with pytest.raises(ProfileError, match=r"^f\.json was written with schema version 4"):
        merge_profiles([simple, future], names=["s.json", "f.json"])
    with pytest.raises(ValueError, match="nothing to merge"):
        merge_profiles([])


def test_default_labels() -> None:
    assert default_labels(["a.json", "dir/b.json"]) == ["a", "b"]
    assert default_labels(["h1/p.json", "h2/p.json"]) == ["h1/p", "h2/p"]
    assert default_labels(["p.json", "p.json"]) == [
        f"{Path.cwd().name}/p",
        f"{Path.cwd().name}/p#2",
    ]


# --------------------------------------------------------------------------- the command


def test_merge_command_writes_a_valid_profile(fixtures_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "all.json"
    simple = str(fixtures_dir / "cpu_simple.json")
    assert main([simple, str(fixtures_dir / "cpu_multifile.json"), "-o", str(out)]) == 0
    merged = json.loads(out.read_text())
    assert_valid_profile(merged)
    assert [s["label"] for s in merged["sources"]] == ["cpu_simple", "cpu_multifile"]


def test_merge_to_stdout(fixtures_dir: Path, capsys: Capture) -> None:
    simple = str(fixtures_dir / "cpu_simple.json")
    assert main([simple, simple, "-o", "-"]) == 0
    merged = json.loads(capsys.readouterr().out)
    assert merged["samples"] == 680


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("future_version.json", r"was written with schema version 4; .+; upgrade spyglass"),
        ("foreign.json", "is not a spyglass profile"),
        ("not_json.json", r"is not valid JSON \(line \d+, column \d+\): .+"),
    ],
)
def test_merge_refuses_with_one_line_naming_the_file(
    fixtures_dir: Path, tmp_path: Path, capsys: Capture, name: str, message: str
) -> None:
    out = tmp_path / "all.json"
    bad = str(fixtures_dir / name)
    assert main([str(fixtures_dir / "cpu_simple.json"), bad, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(f"spyglass: error: {re.escape(bad)} {message}\n", err), err
    assert not out.exists()


def test_merge_usage_errors_are_one_line(capsys: Capture) -> None:
    assert main(["a.json"]) == 2
    assert capsys.readouterr().err == (
        "spyglass merge: error: the following arguments are required: -o/--output "
        "(see 'spyglass merge --help')\n"
    )


def test_the_collectors_time_is_added_up_and_kept_as_a_part(simple: dict[str, Any]) -> None:
    """cpu_gc_s (part of cpu_python_s) is summed like the times it is part of; a profile
    from before it existed counts as none."""
    with_gc = copy.deepcopy(simple)
    with_gc["cpu_gc_s"] = 0.25
    path = next(iter(with_gc["files"]))
    line = with_gc["files"][path]["lines"][0]
    line["cpu_gc_s"] = min(0.1, line["cpu_python_s"])
    merged = merge_profiles([with_gc, with_gc, simple], names=["a.json", "b.json", "c.json"])
    assert_valid_profile(merged)
    assert merged["cpu_gc_s"] == pytest.approx(0.5)
    merged_line = next(
        ln for ln in merged["files"][path]["lines"] if ln["lineno"] == line["lineno"]
    )
    assert merged_line["cpu_gc_s"] == pytest.approx(2 * line["cpu_gc_s"])
