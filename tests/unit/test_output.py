"""The end of a profiled run: writing the JSON profile, the report and the HTML page."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from spyglass.profile_model.io import validate
from spyglass.reporters import html as html_reporter
from spyglass.runtime import output
from spyglass.runtime.options import ProfileOptions

Capture = pytest.CaptureFixture[str]


@pytest.fixture
def data(simple: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(simple))  # a profile of its own, as the run's merge makes


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    urls: list[str] = []

    def open_(url: str) -> bool:
        urls.append(url)
        return True

    monkeypatch.setattr("webbrowser.open", open_)
    return urls


def options(tmp_path: Path, **kw: Any) -> ProfileOptions:
    kw.setdefault("report", False)
    return ProfileOptions(outfile=str(tmp_path / "p.json"), color=False, **kw)


def test_html_after_the_json(
    tmp_path: Path, data: dict[str, Any], simple: dict[str, Any], capsys: Capture, opened: list[str]
) -> None:
    page = tmp_path / "p.html"
    output.write_and_report(data, options(tmp_path, html=str(page)))
    assert validate(json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))) == simple
    expected = html_reporter.render_html(simple, profile_path=str(tmp_path / "p.json"))
    assert page.read_text(encoding="utf-8") == expected
    assert capsys.readouterr().err == ""  # --no-report: quiet
    assert opened == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.html", "p.json"]


def test_with_the_report_says_where(tmp_path: Path, data: dict[str, Any], capsys: Capture) -> None:
    page = tmp_path / "p.html"
    output.write_and_report(data, options(tmp_path, html=str(page), report=True))
    err = capsys.readouterr().err.splitlines()
    assert err[-2].startswith("Profile written to ")
    assert err[-1] == f"HTML report written to {page}"


def test_open_in_a_browser(tmp_path: Path, data: dict[str, Any], opened: list[str]) -> None:
    page = tmp_path / "p.html"
    output.write_and_report(data, options(tmp_path, html=str(page), open_browser=True))
    assert opened == [page.resolve().as_uri()]


def test_no_browser_is_one_line(
    tmp_path: Path, data: dict[str, Any], capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(url: str) -> bool:
        raise RuntimeError("no display")

    monkeypatch.setattr("webbrowser.open", fail)
    page = tmp_path / "p.html"
    output.write_and_report(data, options(tmp_path, html=str(page), open_browser=True))
    assert page.exists()
    assert capsys.readouterr().err == f"spyglass: could not start a web browser; open {page}\n"


def test_unwritable_html_keeps_the_json(
    tmp_path: Path, data: dict[str, Any], simple: dict[str, Any], capsys: Capture, opened: list[str]
) -> None:
    page = tmp_path / "gone" / "p.html"
    output.write_and_report(data, options(tmp_path, html=str(page), open_browser=True))
    assert validate(json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))) == simple
    assert capsys.readouterr().err == (
        f"spyglass: error: could not write the HTML report to {str(page)!r}: "
        f"No such file or directory; the profile is in {tmp_path / 'p.json'}\n"
    )
    assert opened == []


def test_failing_html_reporter_keeps_the_json(
    tmp_path: Path, data: dict[str, Any], capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kw: Any) -> None:
        raise ValueError("bad asset")

    monkeypatch.setattr(html_reporter.HtmlReporter, "render", broken)
    page = tmp_path / "p.html"
    output.write_and_report(data, options(tmp_path, html=str(page), report=True))
    err = capsys.readouterr().err.splitlines()
    assert err[-2].startswith("Profile written to ")  # the terminal report is unaffected
    assert err[-1] == (
        f"spyglass: error: could not write the HTML report to {str(page)!r}: bad asset; "
        f"the profile is in {tmp_path / 'p.json'}"
    )
    assert (tmp_path / "p.json").exists() and not page.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"]  # no temporary file left


def test_unwritable_json_still_gets_its_page(
    tmp_path: Path,
    data: dict[str, Any],
    simple: dict[str, Any],
    capsys: Capture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    page = tmp_path / "p.html"
    opts = options(tmp_path, html=str(page))
    opts.outfile = str(tmp_path / "gone" / "p.json")
    output.write_and_report(data, opts)
    saved = tmp_path / f"spyglass-profile-{os.getpid()}.json"
    assert capsys.readouterr().err == (
        f"spyglass: error: cannot write the profile to {opts.outfile!r}: "
        f"No such file or directory; it was saved to {saved} instead\n"
    )
    assert saved.read_text(encoding="utf-8") == output.profile_text(data)
    text = page.read_text(encoding="utf-8")
    assert text == html_reporter.render_html(simple)  # the data island holds the profile


def test_unwritable_json_still_shows_its_report(
    tmp_path: Path, data: dict[str, Any], capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A profile that cannot be written (a full disk) still has its terminal report shown,
    without a "Profile written" line, and the error comes last, where it is seen, saying
    where the profile went instead: the run cannot be run again for it."""
    monkeypatch.chdir(tmp_path)
    opts = options(tmp_path, report=True)
    opts.outfile = str(tmp_path / "gone" / "p.json")
    output.write_and_report(data, opts)
    err = capsys.readouterr().err.splitlines()
    saved = tmp_path / f"spyglass-profile-{os.getpid()}.json"
    assert err[-1] == (
        f"spyglass: error: cannot write the profile to {opts.outfile!r}: "
        f"No such file or directory; it was saved to {saved} instead"
    )
    assert json.loads(saved.read_text(encoding="utf-8"))["format"] == data["format"]
    assert len(err) > 3, err  # the report's lines
    assert not any(line.startswith("Profile written") for line in err), err


def test_check_writable_names_the_file(tmp_path: Path) -> None:
    assert output.check_writable(str(tmp_path / "x.json")) is None
    assert output.check_writable(str(tmp_path), "the HTML report") == (
        f"cannot write the HTML report to {str(tmp_path)!r}: it is a directory"
    )


def test_the_text_of_a_profile_is_written_as_it_is_and_read_for_the_report(
    tmp_path: Path, data: dict[str, Any], simple: dict[str, Any], capsys: Capture
) -> None:
    # As the supervisor of a run of one process has it (fragments.finish_run).
    text = output.profile_text(data)
    page = tmp_path / "p.html"
    output.write_and_report(text, options(tmp_path, html=str(page), report=True))
    assert (tmp_path / "p.json").read_text(encoding="utf-8") == text
    err = capsys.readouterr().err.splitlines()
    assert err[-2].startswith("Profile written to ") and err[-1].startswith("HTML report")
    # The page of the profile as any reader reads the file (the same as `simple`'s).
    read = validate(json.loads(text))
    assert read == validate(json.loads(output.profile_text(simple)))
    expected = html_reporter.render_html(read, profile_path=str(tmp_path / "p.json"))
    assert page.read_text(encoding="utf-8") == expected


def test_a_text_that_does_not_read_still_is_the_profile_and_one_line(
    tmp_path: Path, capsys: Capture
) -> None:
    text = '{"format":"spyglass-profile","threads":[{"tid":1}]}'[:-3] + "]}"
    output.write_and_report(text, options(tmp_path, report=True, html=str(tmp_path / "p.html")))
    assert (tmp_path / "p.json").read_text(encoding="utf-8") == text
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("spyglass: error: the profile cannot be read for the report: ")
    assert not (tmp_path / "p.html").exists()


def _report_of(profile: dict[str, Any] | str, tmp_path: Path, capsys: Capture) -> list[str]:
    output.write_and_report(profile, options(tmp_path, report=True))
    return capsys.readouterr().err.splitlines()


def test_the_report_of_a_text_reads_the_stack_table_only_when_it_draws_on_it(
    tmp_path: Path, data: dict[str, Any], capsys: Capture
) -> None:
    """The terminal report of a profile's text leaves its stack table (frame_files, frames,
    stacks) unread when the program's files have figures, and reads it when they have none
    (the whole run's hottest lines come from the stacks): the same report either way."""
    text = output.profile_text(data)
    assert text.index('"frame_files":') > text.index('"files":')
    assert _report_of(text, tmp_path, capsys) == _report_of(data, tmp_path, capsys)
    # The table damaged: the report without it is still whole.
    cut = text[: text.index('"frames":')] + '"frames":[{]}'
    assert _report_of(cut, tmp_path, capsys) == _report_of(data, tmp_path, capsys)

    idle = json.loads(json.dumps(data))
    idle["files"] = {}
    whole = _report_of(idle, tmp_path, capsys)
    assert any("whole run" in line for line in whole), whole
    assert _report_of(output.profile_text(idle), tmp_path, capsys) == whole
