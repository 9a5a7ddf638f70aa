"""`spyglass view` with no argument opens ./spyglass-profile.json; `--open` that cannot
start a browser says so and exits non-zero (view and diff)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from spyglass.cli.diff import main as diff_main
from spyglass.cli.view import main as view_main

Capture = pytest.CaptureFixture[str]


def test_view_without_argument_reads_the_default_profile(
    fixtures_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    monkeypatch.chdir(tmp_path)
    assert view_main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spyglass: error: no profile given, and no spyglass-profile.json")
    shutil.copy(fixtures_dir / "cpu_simple.json", tmp_path / "spyglass-profile.json")
    assert view_main(["--width", "100"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("spyglass · simple.py")


def test_open_without_a_browser_fails(
    fixtures_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: False)
    page = tmp_path / "p.html"
    profile = str(fixtures_dir / "cpu_simple.json")
    assert view_main(["--html", "--open", "-o", str(page), profile]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"spyglass: error: could not start a web browser; the file is {page}"
    assert page.exists()  # the report itself is written
    diff_page = tmp_path / "d.html"
    assert diff_main(["--format", "html", "--open", "-o", str(diff_page), profile, profile]) == 2
    assert "could not start a web browser" in capsys.readouterr().err
    assert diff_page.exists()


def test_open_that_raises_is_one_line(
    fixtures_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    def broken(url: str, *args: object, **kwargs: object) -> bool:
        raise OSError("no display")

    monkeypatch.setattr("webbrowser.open", broken)
    page = tmp_path / "p.html"
    assert (
        view_main(["--html", "--open", "-o", str(page), str(fixtures_dir / "cpu_simple.json")]) == 2
    )
    assert "Traceback" not in capsys.readouterr().err


def test_format_by_the_output_name(fixtures_dir: Path, tmp_path: Path, capsys: Capture) -> None:
    from spyglass.reporters import format_for_path, get_reporter

    assert format_for_path("out/report.HTML") == "html"
    assert format_for_path("run.speedscope.json") == "speedscope"
    assert format_for_path("run.json") == "json"
    assert format_for_path("stacks.folded") == "collapsed"
    assert format_for_path("run.prof") == "pstats"
    assert format_for_path("notes") is None and format_for_path(".html") is None
    for name in ("html", "speedscope", "collapsed", "pstats", "json", "terminal"):
        assert format_for_path("x" + get_reporter(name).extensions[0]) == name
    profile = str(fixtures_dir / "cpu_simple.json")
    page = tmp_path / "page.html"
    assert view_main(["-o", str(page), profile]) == 0
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    scope = tmp_path / "run.speedscope.json"
    assert view_main(["-o", str(scope), profile]) == 0
    assert '"$schema":"https://www.speedscope.app/file-format-schema.json"' in scope.read_text(
        encoding="utf-8"
    ).replace(" ", "")
    # An explicit --format wins over the name.
    text = tmp_path / "report.html"
    assert view_main(["--format", "terminal", "-o", str(text), profile]) == 0
    assert text.read_text(encoding="utf-8").startswith("spyglass · simple.py")
