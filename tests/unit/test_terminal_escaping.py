"""No control character from a profile's data reaches a terminal (issue 13, item 5).

A profile shared by someone else can hold any string: file paths, source lines, function,
thread and program names with escape sequences that would set the window title, write
the clipboard (OSC 52), clear the screen or ring the bell. Every text output of view and
diff (terminal with and without colour, collapsed, json, speedscope) shows them escaped;
spyglass's own colours (SGR sequences) are all the escapes left.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

import pytest

from spyglass import json_text
from spyglass.cli import diff as diff_cli
from spyglass.cli import view as view_cli
from spyglass.safe_text import dumped_json_is_plain, escape_data, escape_text, json_text_safe

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

HOSTILE = [
    "\x1b]0;pwned\x07",  # window title
    "\x1b]52;c;cHduZWQ=\x07",  # clipboard
    "\x1b[2J\x1b[H",  # clear the screen
    "\x9b31m",  # C1 CSI
    "\x9d0;t\x9c",  # C1 OSC
    "\x07\x08\r\x0b\x0c\x7f",
    "\u202eevil\u202c",  # bidi override
    "\x00",
]
PAYLOAD = "".join(HOSTILE)
# What must not appear raw: every C0 control but tab and newline, DEL, C1.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
SGR = re.compile("\x1b\\[[0-9;]*m")


def poison(value: Any, key: str = "") -> Any:
    """Every string of a profile, keys of files included, with the payload in it."""
    if isinstance(value, str):
        return value if key in ("format",) else f"{value}{PAYLOAD}"
    if isinstance(value, list):
        return [poison(v, key) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            name = f"{k}{PAYLOAD}" if key == "files" else k
            out[name] = poison(v, k)
        return out
    return value


@pytest.fixture(params=["cpu_simple.json", "mem_simple.json", "cpu_multifile.json"])
def hostile(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    doc = poison(json.loads((FIXTURES / request.param).read_text()))
    path = tmp_path / f"hostile{PAYLOAD.replace(chr(0), '')}.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return str(path)


def assert_no_raw_controls(text: str, *, colour: bool = False) -> None:
    shown = SGR.sub("", text) if colour else text
    found = RAW.findall(shown)
    assert not found, f"raw controls in the output: {sorted(set(found))!r}"


def run(
    main: Callable[[list[str]], int], argv: list[str], capsys: pytest.CaptureFixture[str]
) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert_no_raw_controls(err)
    return out


@pytest.mark.parametrize("colour", [False, True])
def test_view_terminal(
    hostile: str, colour: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FORCE_COLOR" if colour else "NO_COLOR", "1")
    out = run(view_cli.main, ["--min-share", "0", "--width", "200", hostile], capsys)
    assert_no_raw_controls(out, colour=colour)
    assert "\\x1b]0;pwned\\x07" in out  # shown, escaped
    if colour:
        assert SGR.search(out)  # spyglass's own colours are still there


@pytest.mark.parametrize("fmt", ["collapsed", "json", "speedscope"])
def test_view_text_formats(hostile: str, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = run(view_cli.main, ["--format", fmt, hostile], capsys)
    assert_no_raw_controls(out)


def test_view_json_keeps_the_data(hostile: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = run(view_cli.main, ["--format", "json", hostile], capsys)
    assert json.loads(out) == json.loads(Path(hostile).read_text(encoding="utf-8"))


@pytest.mark.parametrize("fmt", ["terminal", "json"])
@pytest.mark.parametrize("colour", [False, True])
def test_diff(
    hostile: str,
    fmt: str,
    colour: bool,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("FORCE_COLOR" if colour else "NO_COLOR", "1")
    before = str(FIXTURES / "cpu_simple.json")
    out = run(diff_cli.main, ["--format", fmt, "--threshold-sigma", "0", before, hostile], capsys)
    assert_no_raw_controls(out, colour=colour and fmt == "terminal")


def test_errors_name_files_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / f"bad{PAYLOAD.replace(chr(0), '')}.json"
    bad.write_text("{}")
    for main, argv in ((view_cli.main, [str(bad)]), (diff_cli.main, [str(bad), str(bad)])):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert_no_raw_controls(out + err)
        assert err.count("\n") == 1


def test_escape_text() -> None:
    assert escape_text("a\tb") == "a\tb"
    assert escape_text("\x1b[2J") == "\\x1b[2J"
    assert escape_text("\u202e") == "\\u202e"
    assert escape_text("\ud800") == "\\ud800"
    assert escape_text("é ü 中 😀") == "é ü 中 😀"
    assert escape_data({"\x07": ["\x9b", 1.5]}) == {"\\x07": ["\\x9b", 1.5]}
    text = json.dumps({"s": "\x9b\u2028"}, ensure_ascii=False, indent=1)
    safe = json_text_safe(text)
    assert json.loads(safe) == {"s": "\x9b\u2028"} and not RAW.search(safe)


def test_dumped_json_is_plain_misses_nothing_to_escape() -> None:
    """The end of `spyglass run` skips escaping the report's data when the profile's JSON
    text says there is nothing to escape: every character escape_text changes must make
    that text not plain, as a string and as a key, at the start, middle and end."""
    changed = 0
    for code in [*range(0x3000), *range(0xD800, 0xE000), 0xFEFF, 0x10FFFF]:
        c = chr(code)
        if escape_text(c) == c:
            continue
        changed += 1
        for doc in ({"k": [f"a{c}b"]}, {f"{c}k": 1}, {"k": c}):
            assert not dumped_json_is_plain(json_text.dumps(doc)), repr(c)
            assert not dumped_json_is_plain(json.dumps(doc)), repr(c)
    assert changed > 2000  # the surrogates, C0, C1 and the bidi controls at least
    for plain in ('print(f"checksum={checksum}")', "C:\\tmp\\x", "a\tb", "héllo"[0:1]):
        assert dumped_json_is_plain(json_text.dumps({"source": plain, "n": [1, 2.5]}))
    # A profile written without ASCII escapes is not read as plain.
    assert not dumped_json_is_plain(json.dumps({"k": "\u202e"}, ensure_ascii=False))
