"""Comparing profiles: spyglass.profile_model.diffing and `spyglass diff`."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from spyglass.cli.diff import main
from spyglass.profile_model import queries as proc
from spyglass.profile_model.diffing import Change, diff_profiles, diff_to_json, match_lines

SIMPLE = "/home/ada/demo/simple.py"
CPU = ("cpu_python_s", "cpu_native_s", "cpu_system_s")
Capture = pytest.CaptureFixture[str]


def _line(profile: dict[str, Any], lineno: int) -> dict[str, Any]:
    return next(ln for ln in profile["files"][SIMPLE]["lines"] if ln["lineno"] == lineno)


def scale_line(profile: dict[str, Any], lineno: int, factor: float, extra_samples: int) -> None:
    """Make line ``lineno`` of simple.py ``factor`` times as slow, with ``extra_samples``
    more samples, keeping its file, function and the run's totals in step."""
    line = _line(profile, lineno)
    owner = profile["files"][SIMPLE]["functions"][proc.line_functions(profile, SIMPLE)[lineno]]
    for key in CPU:
        added = line[key] * (factor - 1)
        for item in (line, owner, profile["files"][SIMPLE], profile):
            item[key] += added
    for item in (line, owner, profile["files"][SIMPLE], profile):
        item["samples"] += extra_samples


def shift_lines(profile: dict[str, Any], by: int, start: int = 1) -> None:
    """As if ``by`` lines had been inserted before line ``start`` of simple.py."""
    entry = profile["files"][SIMPLE]
    for line in entry["lines"]:
        line["lineno"] += by if line["lineno"] >= start else 0
    for fn in entry["functions"]:
        fn["first_lineno"] += by if fn["first_lineno"] >= start else 0
    for frame in profile["frames"]:
        if frame["file"] == SIMPLE and frame["lineno"] >= start:
            frame["lineno"] += by


def _flagged(changes: list[Change]) -> list[tuple[str, int | None, str]]:
    return [(c.name, c.after_lineno, c.verdict) for c in changes if c.flagged]


def test_a_2x_slower_line_with_many_samples_is_flagged(simple: dict[str, Any]) -> None:
    after = copy.deepcopy(simple)
    scale_line(after, 8, 2.0, 199)  # 1.99 s over 199 samples -> 3.98 s over 398
    diff = diff_profiles(simple, after)
    assert _flagged(diff.lines) == [("checksum", 8, "slower")]
    assert _flagged(diff.functions) == [("checksum", 5, "slower")]
    change = diff.lines[0]
    assert change.delta_s == pytest.approx(1.991)
    expected_sigma = ((1.991 / 199**0.5) ** 2 + (3.982 / 398**0.5) ** 2) ** 0.5
    assert change.sigma_s == pytest.approx(expected_sigma)
    assert diff.total.verdict == "slower"
    assert diff.slower() == [change] and diff.faster() == []


def test_a_small_sample_wobble_is_not(simple: dict[str, Any]) -> None:
    after = copy.deepcopy(simple)
    scale_line(after, 10, 2.0, 2)  # 0.02 s over 2 samples -> 0.04 s over 4
    diff = diff_profiles(simple, after)
    wobble = next(c for c in diff.lines if c.after_lineno == 10)
    assert wobble.delta_s == pytest.approx(0.02)
    assert not wobble.flagged and wobble.verdict == "noise"
    assert _flagged(diff.lines) == []


def test_faster_and_the_threshold(simple: dict[str, Any]) -> None:
    after = copy.deepcopy(simple)
    scale_line(after, 7, 0.5, -41)
    assert _flagged(diff_profiles(simple, after).lines) == [("checksum", 7, "faster")]
    assert _flagged(diff_profiles(simple, after, threshold_sigma=20).lines) == []
    with pytest.raises(ValueError):
        diff_profiles(simple, after, threshold_sigma=-1)


def test_an_identical_profile_has_no_changes(multifile: dict[str, Any]) -> None:
    diff = diff_profiles(multifile, copy.deepcopy(multifile))
    assert all(c.delta_s == 0 and not c.flagged for c in [diff.total, *diff.lines])
    assert {c.match for c in diff.lines} == {"same"}
    assert len(diff.lines) == sum(
        1 for e in multifile["files"].values() for ln in e["lines"] if proc.cpu_s(ln) > 0
    )


def test_lines_are_matched_across_a_shifted_line_number(simple: dict[str, Any]) -> None:
    after = copy.deepcopy(simple)
    shift_lines(after, 3)  # three lines inserted at the top of the file
    diff = diff_profiles(simple, after)
    assert _flagged(diff.lines) == [] and _flagged(diff.functions) == []
    assert {(c.before_lineno, c.after_lineno, c.match) for c in diff.lines} == {
        (7, 10, "moved"),
        (8, 11, "moved"),
        (9, 12, "moved"),
        (10, 13, "moved"),
        (15, 18, "moved"),
    }
    assert {c.match for c in diff.functions} == {"moved"}
    # and a real change on a moved line is reported on it
    scale_line(after, 11, 2.0, 199)
    [slower] = diff_profiles(simple, after).slower()
    assert (slower.before_lineno, slower.after_lineno, slower.match) == (8, 11, "moved")
    assert slower.source == "total += (i * i) % 7"


def test_fallback_to_line_numbers_and_new_or_gone_lines(simple: dict[str, Any]) -> None:
    after = copy.deepcopy(simple)
    _line(after, 9)["source"] = "    digits = sorted(str(i) for i in range(n // 10))"
    entry = after["files"][SIMPLE]
    entry["lines"] = [ln for ln in entry["lines"] if ln["lineno"] != 10]
    pairs = {
        (b and b["lineno"], a and a["lineno"]): how
        for b, a, how in match_lines(simple, after, SIMPLE)
    }
    assert pairs[(9, 9)] == "edited"
    assert pairs[(10, None)] == "gone"
    assert pairs[(8, 8)] == "same"
    new = copy.deepcopy(after)
    new["files"][SIMPLE]["lines"].append(dict(_line(simple, 10), lineno=30, source="new()"))
    assert match_lines(after, new, SIMPLE)[-1][2] == "new"


def test_repeated_lines_pair_up_in_order(simple: dict[str, Any]) -> None:
    before = copy.deepcopy(simple)
    for n in (7, 8):
        _line(before, n)["source"] = "    step()"
    after = copy.deepcopy(before)
    shift_lines(after, 1, start=7)
    pairs = [(b["lineno"], a["lineno"], how) for b, a, how in match_lines(before, after, SIMPLE)]
    assert (7, 8, "moved") in pairs and (8, 9, "moved") in pairs
    # one copy without samples in after: the other lines' move (+1) tells which one is left
    entry = after["files"][SIMPLE]
    entry["lines"] = [ln for ln in entry["lines"] if ln["lineno"] != 8]
    pairs = [
        (b and b["lineno"], a and a["lineno"], how)
        for b, a, how in match_lines(before, after, SIMPLE)
    ]
    assert (8, 9, "moved") in pairs and (7, None, "gone") in pairs


def test_json_document(simple: dict[str, Any]) -> None:
    after = copy.deepcopy(simple)
    scale_line(after, 8, 2.0, 199)
    doc = json.loads(json.dumps(diff_to_json(diff_profiles(simple, after), simple, after)))
    assert doc["format"] == "spyglass-diff" and doc["version"] == 1
    assert doc["threshold_sigma"] == 2.0
    assert doc["before"]["samples"] == 340 and doc["after"]["samples"] == 539
    first = doc["lines"][0]
    assert first["verdict"] == "slower" and first["flagged"] is True
    assert first["before_lineno"] == first["after_lineno"] == 8
    assert set(first) >= {"delta_s", "sigma_s", "before_s", "after_s", "match", "source"}
    assert doc["functions"][0]["name"] == "checksum"


# --------------------------------------------------------------------------- the command


@pytest.fixture
def slower_file(simple: dict[str, Any], tmp_path: Path) -> Path:
    after = copy.deepcopy(simple)
    scale_line(after, 8, 2.0, 199)
    scale_line(after, 10, 2.0, 2)
    path = tmp_path / "after.json"
    path.write_text(json.dumps(after))
    return path


def test_diff_terminal_output(fixtures_dir: Path, slower_file: Path, capsys: Capture) -> None:
    assert main([str(fixtures_dir / "cpu_simple.json"), str(slower_file)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "\x1b[" not in out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert out.startswith("spyglass diff: ")
    assert "Slower lines (1)\n" in out and "Faster lines (0)\n" in out
    assert re.search(r"\+1\.99s ±0\.49s +1\.99s → 3\.98s +simple\.py:8  total \+=", out), out
    assert "1 line and 0 functions changed within the noise (not shown)" in out


def test_diff_json_output_to_a_file(
    fixtures_dir: Path, slower_file: Path, tmp_path: Path, capsys: Capture
) -> None:
    out = tmp_path / "diff.json"
    before = str(fixtures_dir / "cpu_simple.json")
    argv = ["--format", "json", "--threshold-sigma", "3", "-o", str(out), before, str(slower_file)]
    assert main(argv) == 0
    assert capsys.readouterr().out == ""
    doc = json.loads(out.read_text())
    assert doc["threshold_sigma"] == 3.0
    assert doc["before"]["file"] == before
    assert [c["after_lineno"] for c in doc["lines"] if c["flagged"]] == [8]


def test_diff_format_by_the_output_name(
    fixtures_dir: Path, slower_file: Path, tmp_path: Path, capsys: Capture
) -> None:
    before, after = str(fixtures_dir / "cpu_simple.json"), str(slower_file)
    assert main(["-o", str(tmp_path / "d.json"), before, after]) == 0
    assert json.loads((tmp_path / "d.json").read_text())["format"] == "spyglass-diff"
    assert main(["-o", str(tmp_path / "d.htm"), before, after]) == 0
    assert (tmp_path / "d.htm").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert main(["-o", str(tmp_path / "d.log"), before, after]) == 0  # no format's: terminal
    assert (tmp_path / "d.log").read_text(encoding="utf-8").startswith("spyglass diff: ")
    # --format wins over the name
    assert main(["--format", "terminal", "-o", str(tmp_path / "t.json"), before, after]) == 0
    assert (tmp_path / "t.json").read_text(encoding="utf-8").startswith("spyglass diff: ")
    capsys.readouterr()


def test_diff_refuses_other_files_with_one_line(fixtures_dir: Path, capsys: Capture) -> None:
    future = str(fixtures_dir / "future_version.json")
    assert main([str(fixtures_dir / "cpu_simple.json"), future]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"spyglass: error: {future} was written with schema version 4")
    assert err.count("\n") == 1
    assert main(["only-one.json"]) == 2
    assert capsys.readouterr().err.startswith("spyglass diff: error: the following arguments")


def _island(page: str) -> Any:
    start = page.index('<script type="application/json" id="diff-data">')
    body = page[page.index(">", start) + 1 : page.index("</script>", start)]
    return json.loads(body)


def test_diff_html_goes_next_to_after(
    fixtures_dir: Path, slower_file: Path, capsys: Capture
) -> None:
    assert main(["--format", "html", str(fixtures_dir / "cpu_simple.json"), str(slower_file)]) == 0
    page = slower_file.with_name("after-diff.html")
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"spyglass: HTML diff written to {page}\n"
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    doc = _island(text)
    assert doc["after"]["file"] == str(slower_file)
    assert [c["after_lineno"] for c in doc["lines"] if c["verdict"] == "slower"] == [8]


def test_diff_html_to_a_file_and_open(
    fixtures_dir: Path,
    slower_file: Path,
    tmp_path: Path,
    capsys: Capture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    opened: list[str] = []

    def fake_open(url: str) -> bool:
        opened.append(url)
        return True

    monkeypatch.setattr("webbrowser.open", fake_open)
    page = tmp_path / "out" / "d.html"
    page.parent.mkdir()
    before = str(fixtures_dir / "cpu_simple.json")
    argv = ["--format", "html", "--threshold-sigma", "3", "-o", str(page), "--open"]
    assert main([*argv, before, str(slower_file)]) == 0
    assert capsys.readouterr().err == f"spyglass: HTML diff written to {page}\n"
    assert opened == [page.resolve().as_uri()]
    assert _island(page.read_text(encoding="utf-8"))["threshold_sigma"] == 3.0
    assert not slower_file.with_name("after-diff.html").exists()
    # --open is for the page only; an unwritable page is one line of error
    assert main(["--open", before, str(slower_file)]) == 2
    assert capsys.readouterr().err == "spyglass: error: --open applies to the html format\n"
    missing = str(tmp_path / "no" / "such" / "d.html")
    assert main(["--format", "html", "-o", missing, before, str(slower_file)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"spyglass: error: cannot write {missing}: ") and err.count("\n") == 1
