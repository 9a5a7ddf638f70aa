"""The terminal report: content, layout at 80 columns, and plain output in pipes."""

from __future__ import annotations

import io
import re
from typing import Any, Callable

import pytest

from spyglass.reporters.terminal import TerminalReporter
from spyglass.reporters.terminal_text import fmt_percent, fmt_seconds, shorten_path

Render = Callable[..., str]
ANSI = re.compile(r"\x1b\[")
SIMPLE = "/home/ada/demo/simple.py"


def _section(text: str, start: str, end: str | None = None) -> list[str]:
    """The lines of ``text`` from the first line containing ``start`` up to ``end``."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if start in line)
    rest = lines[first + 1 :]
    if end is not None:
        rest = rest[: next((i for i, line in enumerate(rest) if end in line), len(rest))]
    return rest


def _first_column(rows: list[str]) -> list[str]:
    return [row.split()[0] for row in rows if row.strip()]


def test_formatters() -> None:
    assert fmt_percent(0) == ""
    assert fmt_percent(0.04) == "<0.1%"
    assert fmt_percent(55.349) == "55.3%"
    assert fmt_percent(99.97) == "100%"
    assert fmt_seconds(0) == ""
    assert fmt_seconds(0.001) == "<0.01s"
    assert fmt_seconds(0.673) == "0.67s"
    assert fmt_seconds(13.951) == "14.0s"
    assert fmt_seconds(1234.4) == "1234s"
    assert fmt_seconds(3.402, space=True) == "3.40 s"
    assert all(len(fmt_seconds(v)) <= 6 for v in (0.001, 9.99, 99.9, 9999.0))


def test_shorten_path() -> None:
    path = "/home/ada/src/imgtool/.venv/lib/python3.11/site-packages/PIL/Image.py"
    assert shorten_path(path, 100, "…") == path
    short = shorten_path(path, 40, "…")
    assert len(short) <= 40 and short.startswith("…/") and short.endswith("/PIL/Image.py")


@pytest.mark.parametrize("fixture", ["simple", "multifile"])
@pytest.mark.parametrize("width", [80, 60, 132])
def test_fits_the_width_without_escape_codes(
    request: pytest.FixtureRequest, render: Render, fixture: str, width: int
) -> None:
    text = render(request.getfixturevalue(fixture), width=width, profile_path="out.json")
    assert not ANSI.search(text)
    for line in text.splitlines():
        assert len(line) <= width, line
        assert line == line.rstrip(), f"trailing spaces: {line!r}"


def test_header_has_the_key_numbers(simple: dict[str, Any], render: Render) -> None:
    text = render(simple)
    lines = text.splitlines()
    assert lines[0] == "spyglass · simple.py"
    assert "3.41 s elapsed · 2 threads · 340 samples (every 10 ms of CPU)" in lines[1]
    assert "CPU  3.40 s" in text
    assert "Python 2.78 s 81.8%" in text
    assert "native 0.53 s 15.5%" in text
    assert "system 0.09 s 2.6%" in text
    assert "wait 3.33 s" in text
    assert "1.2% of CPU ran outside profiled files" in text


def test_file_section_rows(simple: dict[str, Any], render: Render) -> None:
    text = render(simple)
    rule = next(line for line in text.splitlines() if SIMPLE in line)
    assert rule.startswith("── ") and rule.endswith("98.8% of CPU · 3.33 s wait ──")
    table = _section(text, SIMPLE, "function")
    assert table[0].split() == ["line", "Python", "native", "system", "wait", "│", "source"]
    rows = {row.split()[0]: row for row in table[1:] if row.strip()}
    assert rows["8"].split()[:5] == ["8", "55.3%", "2.5%", "0.7%", "1.61s"]
    assert rows["8"].endswith("│     total += (i * i) % 7")  # indentation kept, dedented
    assert rows["7"].endswith("│ for i in range(n):")
    assert rows["17"].split()[:2] == ["17", "0.25s"]  # wait only, no CPU figures
    assert rows["17"].endswith("time.sleep(0.25)")


def test_runs_of_omitted_lines_become_one_elision_row(
    simple: dict[str, Any], render: Render
) -> None:
    table = _section(render(simple), SIMPLE, "function")
    assert _first_column(table[1:]) == ["7", "8", "9", "10", "⋮", "15", "⋮", "17", "18"]
    elisions = [row for row in table if row.strip().startswith("⋮")]
    assert all(row.split() == ["⋮", "│"] for row in elisions)


def test_lines_below_the_threshold_are_summarised(simple: dict[str, Any]) -> None:
    out = io.StringIO()
    TerminalReporter(top=1, color=False, width=80).write(simple, out)
    table = _section(out.getvalue(), SIMPLE, "function")
    assert _first_column(table[1:3]) == ["7", "8"]
    assert "+ 2 more lines below 1% (0.9% of CPU in all)" in "\n".join(table)
    assert _first_column(table[1:]).count("⋮") == 1  # 9 .. 17: one run


def test_rough_figures_are_marked(simple: dict[str, Any], render: Render) -> None:
    text = render(simple)
    row10 = next(r for r in _section(text, SIMPLE, "function") if r.split()[:1] == ["10"])
    assert row10.split()[1:3] == ["~0.4%", "~0.2%"]
    assert "~ = fewer than 10 samples, rough" in text
    row8 = next(r for r in _section(text, SIMPLE, "function") if r.split()[:1] == ["8"])
    assert "~" not in row8


def test_function_table(simple: dict[str, Any], render: Render) -> None:
    text = render(simple)
    funcs = _section(text, "│ function", "% = share")
    rows = [row.split() for row in funcs if row.strip()]
    assert rows[0] == ["5", "81.2%", "15.0%", "2.2%", "2.67s", "│", "checksum"]
    assert rows[1] == ["13", "~0.1%", "~0.2%", "0.66s", "│", "main"]


def test_wait_column_only_when_there_is_wait(multifile: dict[str, Any], render: Render) -> None:
    text = render(multifile)
    string_heads = _section(text, "── <string>")[0]
    assert string_heads.split() == ["line", "Python", "native", "system", "│", "source"]
    assert "(source not available)" in text
    resize_heads = _section(text, "imgtool/resize.py ")[0]
    assert "wait" in resize_heads.split()


def test_multifile_order_and_hottest_lines(multifile: dict[str, Any], render: Render) -> None:
    text = render(multifile)
    rules = [line for line in text.splitlines() if line.startswith("── ")]
    assert [r.split()[1] for r in rules] == [
        "/home/ada/src/imgtool/imgtool/resize.py",
        "…/lib/python3.11/site-packages/PIL/Image.py",
        "/home/ada/src/imgtool/imgtool/io.py",
        "/home/ada/src/imgtool/imgtool/__main__.py",
        "<string>",
    ]
    hottest = _section(text, "Hottest lines", "── ")
    assert hottest[0].split()[:2] == ["33.8%", "resize.py:32"]
    assert len([h for h in hottest if h.strip()]) == 5
    assert "14.0s │ for _ in pool.map(" in text  # the main thread waiting on the pool


def test_profile_path_line(simple: dict[str, Any], render: Render) -> None:
    text = render(simple, profile_path="spyglass-profile.json")
    assert text.splitlines()[-1] == "Profile written to spyglass-profile.json"
    assert "Profile written" not in render(simple)
    wide = render(simple, width=120, profile_path="p.json")
    assert wide.splitlines()[-1] == (
        "Profile written to p.json · spyglass view p.json shows it again"
    )


def test_color_output_has_escape_codes(simple: dict[str, Any], render: Render) -> None:
    colored = render(simple, color=True)
    assert ANSI.search(colored)
    assert re.sub(r"\x1b\[[0-9;]*m", "", colored) == render(simple)


@pytest.mark.parametrize("width", [40, 80])
def test_ascii_stream_gets_ascii_only(
    simple: dict[str, Any], multifile: dict[str, Any], width: int
) -> None:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii")  # would raise on any non-ASCII character
    TerminalReporter(color=False, width=width).write(multifile, out)
    TerminalReporter(color=False, width=width).write(simple, out)
    out.flush()
    text = raw.getvalue().decode("ascii")
    assert all(len(line) <= width for line in text.splitlines())
    assert re.search(r"^ +: +\|$", text, re.MULTILINE)  # the elision row
    assert "-- /home/ada/demo/simple.py -" in text or width < 80


def test_profile_without_samples_in_profiled_code(simple: dict[str, Any], render: Render) -> None:
    simple["files"] = {}
    text = render(simple)
    assert "No samples landed in profiled code." in text
    assert "──" not in text


def test_profile_with_no_cpu_at_all(simple: dict[str, Any], render: Render) -> None:
    for times in [simple, simple["unattributed"], *simple["threads"]]:
        for key in ("cpu_python_s", "cpu_native_s", "cpu_system_s"):
            times[key] = 0.0
    for entry in simple["files"].values():
        for item in [entry, *entry["lines"], *entry["functions"]]:
            for key in ("cpu_python_s", "cpu_native_s", "cpu_system_s"):
                item[key] = 0.0
    text = render(simple)
    assert "CPU     0 s" in text
    assert "17                       0.25s │ time.sleep(0.25)" in text


def test_width_none_uses_columns(
    simple: dict[str, Any], render: Render, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    text = render(simple, width=None)
    assert max(len(line) for line in text.splitlines()) > 80
    assert all(len(line) <= 100 for line in text.splitlines())


def test_long_function_lists_are_cut(multifile: dict[str, Any]) -> None:
    out = io.StringIO()
    TerminalReporter(max_functions=2, color=False, width=80).write(multifile, out)
    funcs = _section(out.getvalue(), "│ function", "── ")
    rows = [row for row in funcs if "│" in row]
    assert [row.split("│ ")[1] for row in rows] == ["sharpen", "resize_all"]
    assert "+ 4 more functions (0.3% of CPU in all)" in "\n".join(funcs)


def test_failed_exit_status_is_shown(simple: dict[str, Any], render: Render) -> None:
    assert "exit status" not in render(simple)
    simple["exit_status"] = 3
    assert render(simple).splitlines()[1].endswith(" · exit status 3")
    simple["exit_status"] = None
    assert "exit status" not in render(simple)


class _ClosedPipe(io.StringIO):
    def write(self, s: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_pipe_raises_broken_pipe_not_system_exit(simple: dict[str, Any]) -> None:
    with pytest.raises(BrokenPipeError):
        TerminalReporter(color=False, width=80).write(simple, _ClosedPipe())
