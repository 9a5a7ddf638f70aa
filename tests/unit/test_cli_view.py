"""`spyglass view`: exit codes, output and error messages."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest

from spyglass.cli.view import main

Capture = pytest.CaptureFixture[str]


def test_view_renders_the_report(fixtures_dir: Path, capsys: Capture) -> None:
    assert main([str(fixtures_dir / "cpu_simple.json"), "--width", "80"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith("spyglass · simple.py\n")
    assert "Python 2.78 s 81.8%" in out
    assert "\x1b[" not in out  # captured stdout is not a terminal
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "Profile written" not in out


def test_width_option(fixtures_dir: Path, capsys: Capture) -> None:
    assert main(["--width", "60", str(fixtures_dir / "cpu_multifile.json")]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) == 60


def test_no_color_wins_over_force_color(
    fixtures_dir: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert main([str(fixtures_dir / "cpu_simple.json")]) == 0
    assert "\x1b[" in capsys.readouterr().out
    assert main(["--no-color", str(fixtures_dir / "cpu_simple.json")]) == 0
    assert "\x1b[" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("missing.json", r"\S+missing\.json does not exist"),
        ("not_json.json", r"\S+not_json\.json is not valid JSON \(line \d+, column \d+\): .+"),
        ("foreign.json", r"\S+foreign\.json is not a spyglass profile"),
        (
            "future_version.json",
            r"\S+future_version\.json was written with schema version 4; "
            r"this spyglass reads versions 1 to 3; upgrade spyglass",
        ),
    ],
)
def test_errors_are_one_line_and_exit_2(
    fixtures_dir: Path, capsys: Capture, name: str, expected: str
) -> None:
    assert main([str(fixtures_dir / name)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert re.fullmatch(f"spyglass: error: {expected}\n", err), err
    assert "Traceback" not in err


def test_help(capsys: Capture) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: spyglass view")
    for option in ("--format", "--html", "--open", "--no-color", "--width", "PROFILE", "terminal"):
        assert option in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--width", "ten", "p.json"], "argument --width: not a number: 'ten'"),
        (["--width", "20", "p.json"], "argument --width: must be at least 40 columns, not 20"),
        (
            ["--format", "svg", "p.json"],
            "argument --format: invalid choice: 'svg' "
            "(choose from collapsed, html, json, pstats, speedscope, terminal)",
        ),
        (["--format", "html", "--html", "p.json"], "argument --html: not allowed with"),
    ],
)
def test_usage_errors_exit_2(capsys: Capture, argv: list[str], message: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    # One line, as every subcommand's: no usage dump before it.
    assert err.count("\n") == 1 and err.startswith(f"spyglass view: error: {message}"), err


def test_closed_pipe_ends_quietly(
    fixtures_dir: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    class ClosedPipe(io.StringIO):
        def write(self, s: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main([str(fixtures_dir / "cpu_simple.json")]) == 0
    assert capsys.readouterr().err == ""
