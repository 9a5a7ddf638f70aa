"""The profile transformations of the view (restrict_files, hide_idle_lines, keep_top_lines,
collapse_threads), uncertainty_s and the stack helpers."""

from __future__ import annotations

import copy
import math
from typing import Any, Callable

import pytest

from helpers import assert_valid_profile
from spyglass.profile_model import queries as proc
from spyglass.profile_model import stack_weights, transforms
from spyglass.profile_model.io import TIMES_KEYS, check_consistency

SIMPLE = "/home/ada/demo/simple.py"
RESIZE = "/home/ada/src/imgtool/imgtool/resize.py"
PIL = "/home/ada/src/imgtool/.venv/lib/python3.11/site-packages/PIL/Image.py"
IO = "/home/ada/src/imgtool/imgtool/io.py"

Transform = Callable[[dict[str, Any]], dict[str, Any]]

TRANSFORMS: dict[str, Transform] = {
    "only": lambda p: transforms.restrict_files(p, ["imgtool/imgtool", "demo"], []),
    "exclude": lambda p: transforms.restrict_files(p, [], ["PIL", "io.py"]),
    "only+exclude": lambda p: transforms.restrict_files(p, ["imgtool"], ["resize"]),
    "nothing": lambda p: transforms.restrict_files(p, [], []),
    "min-share 5": lambda p: transforms.hide_idle_lines(p, 5.0),
    "min-share 0": lambda p: transforms.hide_idle_lines(p, 0.0),
    "min-share 100": lambda p: transforms.hide_idle_lines(p, 100.0),
    "top 1": lambda p: transforms.keep_top_lines(p, 1),
    "top 4": lambda p: transforms.keep_top_lines(p, 4),
    "top 0": lambda p: transforms.keep_top_lines(p, 0),
    "collapse": transforms.collapse_threads,
    "all": lambda p: transforms.collapse_threads(
        transforms.keep_top_lines(
            transforms.hide_idle_lines(transforms.restrict_files(p, [], ["PIL"]), 1), 3
        )
    ),
}


def _totals(times: dict[str, Any]) -> list[float]:
    return [times[k] for k in TIMES_KEYS]


@pytest.mark.parametrize("fixture", ["simple", "multifile"])
@pytest.mark.parametrize("name", TRANSFORMS)
def test_transforms_keep_the_profile_valid_and_consistent(
    name: str, fixture: str, request: pytest.FixtureRequest
) -> None:
    profile = request.getfixturevalue(fixture)
    original = copy.deepcopy(profile)
    result = TRANSFORMS[name](profile)
    assert profile == original, "the input was modified"
    assert result is not profile
    assert_valid_profile(result, where=f"{name}({fixture})")
    assert check_consistency(result) == []
    assert _totals(result) == _totals(profile)  # the process's totals never change
    removed = {k: profile["unattributed"][k] for k in TIMES_KEYS}
    for path, entry in profile["files"].items():
        kept = result["files"].get(path)
        for key in TIMES_KEYS:
            removed[key] += entry[key] - (kept[key] if kept else 0)
    for key in TIMES_KEYS:  # unattributed grows by exactly what left the files
        assert result["unattributed"][key] == pytest.approx(removed[key], abs=1e-9)


def test_uncertainty() -> None:
    assert proc.uncertainty_s(2.0, 100) == pytest.approx(0.2)
    assert proc.uncertainty_s(0.5, 1) == 0.5
    assert proc.uncertainty_s(1.0, 0) == 0.0
    assert proc.uncertainty_s(0.0, 25) == 0.0
    assert proc.uncertainty_s(3.0, 9) == pytest.approx(3.0 / math.sqrt(9))


def test_restrict_files_moves_files_to_unattributed(multifile: dict[str, Any]) -> None:
    result = transforms.restrict_files(multifile, [], ["PIL"])
    assert PIL not in result["files"] and RESIZE in result["files"]
    pil = multifile["files"][PIL]
    for key in TIMES_KEYS:
        expected = multifile["unattributed"][key] + pil[key]
        assert result["unattributed"][key] == pytest.approx(expected)
    assert result["files"][RESIZE] is multifile["files"][RESIZE]
    # every stack passes through a kept file, so all stay
    assert len(result["stacks"]) == len(multifile["stacks"])


def test_restrict_files_drops_stacks_that_never_enter_a_kept_file(
    multifile: dict[str, Any],
) -> None:
    result = transforms.restrict_files(multifile, ["io.py"], [])
    assert list(result["files"]) == [IO]
    frames = multifile["frames"]
    for stack in result["stacks"]:
        assert any(frames[i]["file"] == IO for i in stack["frames"])
    assert len(result["stacks"]) == 6
    assert transforms.restrict_files(multifile, ["nothing-matches"], [])["stacks"] == []


def test_hide_idle_lines(multifile: dict[str, Any]) -> None:
    result = transforms.hide_idle_lines(multifile, 5.0)
    total, wait = proc.total_cpu(multifile), multifile["wait_s"]
    for entry in result["files"].values():
        for line in entry["lines"]:
            assert proc.cpu_s(line) >= total / 20 or line["wait_s"] >= wait / 20
    assert [ln["lineno"] for ln in result["files"][RESIZE]["lines"]] == [30, 31, 32, 33, 50]
    sharpen = next(f for f in result["files"][RESIZE]["functions"] if f["name"] == "sharpen")
    lines = [ln for ln in result["files"][RESIZE]["lines"] if 28 <= ln["lineno"] <= 34]
    assert sharpen["samples"] == sum(ln["samples"] for ln in lines)  # 28, 29 and 34 left it
    assert "<string>" not in result["files"]  # no line left


def test_keep_top_lines(multifile: dict[str, Any]) -> None:
    result = transforms.keep_top_lines(multifile, 3)
    kept = {(p, ln["lineno"]) for p, e in result["files"].items() for ln in e["lines"]}
    assert kept == {(RESIZE, 32), (RESIZE, 33), (PIL, 2192)}
    assert [f["name"] for f in result["files"][PIL]["functions"]] == ["Image.resize"]
    assert transforms.keep_top_lines(multifile, 0)["files"] == {}


def test_collapse_threads(multifile: dict[str, Any]) -> None:
    result = transforms.collapse_threads(multifile)
    [thread] = result["threads"]
    assert thread["tid"] == 51001 and thread["name"] == "all 4 threads"
    for key in TIMES_KEYS:
        assert thread[key] == pytest.approx(sum(t[key] for t in multifile["threads"]))
    single = dict(multifile, threads=multifile["threads"][:1])
    assert transforms.collapse_threads(single)["threads"] == single["threads"]


def test_line_functions(multifile: dict[str, Any], simple: dict[str, Any]) -> None:
    funcs = multifile["files"][IO]["functions"]
    owners = proc.line_functions(multifile, IO)
    assert {n: funcs[i]["name"] for n, i in owners.items()} == {
        8: "_chunk",
        9: "_chunk",
        16: "save",
        17: "save",
        21: "save",
        22: "save",
    }
    # line 50 is on both resize_all's and its lambda's frames; the stacks say whose time it is
    funcs = multifile["files"][RESIZE]["functions"]
    assert funcs[proc.line_functions(multifile, RESIZE)[50]]["name"] == "resize_all"
    names = simple["files"][SIMPLE]["functions"]
    assert [names[i]["name"] for i in proc.line_functions(simple, SIMPLE).values()] == [
        "checksum",
        "checksum",
        "checksum",
        "checksum",
        "main",
        "main",
        "main",
    ]


def test_stack_weights(simple: dict[str, Any]) -> None:
    assert stack_weights.stack_weight(simple["stacks"][0], "cpu") == pytest.approx(1.08)
    assert stack_weights.stack_weight(simple["stacks"][0], "samples") == 108
    assert stack_weights.unstacked(simple, "cpu") == pytest.approx(0.042)
    assert stack_weights.unstacked(simple, "samples") == 4
    assert stack_weights.unstacked(simple, "wait") == 0
    with pytest.raises(ValueError, match="weight must be"):
        stack_weights.stack_weight(simple, "bytes")
