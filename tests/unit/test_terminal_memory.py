"""The terminal report of a memory profile, and of a CPU-only one (unchanged by memory)."""

from __future__ import annotations

import copy
import io
import re
from pathlib import Path
from typing import Any, Callable

import pytest

from spyglass.cli.view import main
from spyglass.reporters.terminal import TerminalReporter
from spyglass.reporters.terminal_memory import (
    SPARK_ASCII,
    SPARK_UNICODE,
    fmt_mb,
    fmt_python,
    fmt_rate,
    sparkline,
)

Render = Callable[..., str]
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SPARK = re.compile(f"[{SPARK_UNICODE}]{{8}}")
Capture = pytest.CaptureFixture[str]


class _AsciiOut(io.StringIO):
    encoding = "ascii"


def _ascii(profile: dict[str, Any], width: int) -> str:
    out = _AsciiOut()
    TerminalReporter(color=False, width=width).write(copy.deepcopy(profile), out)
    return out.getvalue()


def _row(text: str, lineno: int) -> str:
    """The first table row of line ``lineno``."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("line Python"))
    return next(line for line in lines[first:] if re.match(rf"\s*{lineno} ", line))


def test_formatters() -> None:
    # The profile counts 2^20 bytes in its MB; a report shows MB of 10^6 bytes.
    mb = 1e6 / (1 << 20)
    assert fmt_mb(0) == "" and fmt_mb(0.01) == "<0.1 MB"
    assert fmt_mb(12.04 * mb) == "12.0 MB" and fmt_mb(318.2 * mb) == "318 MB"
    assert fmt_mb(12.0) == "12.6 MB"  # 12 * 2^20 bytes
    assert fmt_mb(2000 * mb) == "2.0 GB"
    assert fmt_rate(152.38 * mb) == "152 MB/s" and fmt_rate(0) == ""
    assert fmt_python(0.874) == "87% py"
    assert all(len(fmt_mb(v)) <= 7 for v in (0.01, 9.99, 99.9, 999.4, 5000.0))


def test_sparkline_levels() -> None:
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7], unicode=True) == SPARK_UNICODE
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7], unicode=False) == SPARK_ASCII
    assert sparkline([5.0, 5.0], unicode=True) == "██"  # scaled from 0
    assert sparkline([0.0, 0.0], unicode=True) == "▁▁"
    assert sparkline([], unicode=True) == ""


@pytest.mark.parametrize(
    ("name", "width", "ascii"),
    [("cpu_simple", 80, False), ("cpu_multifile", 96, True)],
)
def test_cpu_only_reports_are_exactly_as_before(
    name: str, width: int, ascii: bool, request: pytest.FixtureRequest
) -> None:
    # The files were written by the reporter (threads section included); a profile without
    # memory figures must render exactly so.
    expected = (FIXTURES / f"{name}.terminal.txt").read_text(encoding="utf-8")
    profile = request.getfixturevalue(name.replace("cpu_", ""))
    out: io.StringIO = _AsciiOut() if ascii else io.StringIO()
    TerminalReporter(color=False, width=width, profile_path="out.json").write(profile, out)
    assert out.getvalue() == expected


def test_memory_figures_are_ignored_unless_memory_profiled(
    mem: dict[str, Any], mem_cpu_only: dict[str, Any], render: Render
) -> None:
    text = render(dict(mem, memory_profiled=False), width=132)
    assert text == render(mem_cpu_only, width=132)
    assert "memory" not in text and "MB" not in text and "leaks" not in text


def test_line_table_has_the_memory_columns(mem: dict[str, Any], render: Render) -> None:
    text = render(mem, width=132)
    heads = next(line for line in text.splitlines() if line.startswith("line Python"))
    assert re.search(r"wait\s+memory\s+peak timeline\s+copy │ source$", heads)
    row = _row(text, 17)
    assert "671 MB  98% py 16.8 MB" in row and "160 MB/s │ out = bytes(view)" in row
    assert SPARK.search(row)
    assert "134 MB   1% py  134 MB" in _row(text, 8)  # mostly native
    assert "101 MB  93% py 92.3 MB" in _row(text, 4)  # mostly Python
    # Line 24 allocated without a CPU sample, and still has its row.
    assert re.search(r"^\s+24\s+16\.8 MB 100% py 16\.8 MB", _row(text, 24))


def test_function_table_has_the_memory_columns(mem: dict[str, Any], render: Render) -> None:
    text = render(mem, width=132)
    row = next(line for line in text.splitlines() if line.endswith("│ shuffle"))
    assert "671 MB  98% py 16.8 MB" in row and "160 MB/s" in row


def test_header_has_the_memory_summary(mem: dict[str, Any], render: Render) -> None:
    lines = render(mem, width=100).splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("  mem  333 MB "))
    spark = lines[first].split("333 MB ", 1)[1]
    assert len(spark) == 48 and set(spark) <= set(SPARK_UNICODE)
    assert spark[0] == SPARK_UNICODE[0] and SPARK_UNICODE[-1] in spark
    assert lines[first + 1].strip() == (
        "max footprint (at mem_demo.py:17) and the footprint over the run"
    )
    assert lines[first + 2].strip() == "allocated 996 MB, 82% Python · copied 682 MB, 162 MB/s"
    assert lines[first + 3].strip() == "native threads (no Python frame) allocated 25.2 MB"


def test_no_native_thread_line_without_native_allocation(
    mem: dict[str, Any], render: Render
) -> None:
    assert "(no Python frame) allocated 25.2 MB" in render(mem)
    mem["native_thread_alloc_mb"] = 0.0
    assert "no Python frame" not in render(mem)


def test_possible_leaks_section(mem: dict[str, Any], render: Render) -> None:
    lines = render(mem, width=100).splitlines()
    start = lines.index("Possible leaks")
    assert lines[start + 1] == "   98% 18.2 MB/s  mem_demo.py:13  _cache.append(bytearray(1 << 20))"
    mem["files"]["/home/ada/memdemo/mem_demo.py"]["leaks"] = []
    assert "Possible leaks" not in render(mem)


def test_lines_that_allocated_the_most(mem: dict[str, Any], render: Render) -> None:
    lines = render(mem, width=100).splitlines()
    start = lines.index("Lines that allocated the most")
    assert lines[start + 1] == "   671 MB  mem_demo.py:17  out = bytes(view)"
    assert lines[start + 5] == '  16.8 MB  mem_demo.py:24  blob = b"x" * (16 << 20)'


@pytest.mark.parametrize("width", [60, 80, 100, 132])
def test_memory_report_fits_the_width(mem: dict[str, Any], render: Render, width: int) -> None:
    text = render(mem, width=width, profile_path="out.json")
    for line in text.splitlines():
        assert len(line) <= width, line
        assert line == line.rstrip(), f"trailing spaces: {line!r}"


def test_narrow_reports_give_up_memory_columns_and_say_so(
    mem: dict[str, Any], render: Render
) -> None:
    narrow = render(mem, width=80)
    heads = next(line for line in narrow.splitlines() if line.startswith("line Python"))
    assert heads.endswith("memory    peak │ source")
    assert "a wider report also shows timeline, copy" in narrow
    assert re.search(r"^\s+24 .*16\.8 MB 100% py 16\.8 MB │ blob", narrow, re.MULTILINE)
    wide = render(mem, width=100)
    assert "a wider report" not in wide and "timeline = the footprint while the line ran" in wide


def test_ascii_fallback(mem: dict[str, Any]) -> None:
    text = _ascii(mem, 132)
    assert text.isascii()
    row = _row(text, 13)
    timeline = row.split("41.9 MB ")[-1].split()[0]
    assert len(timeline) == 8 and set(timeline) <= set(SPARK_ASCII)
    assert timeline[0] == SPARK_ASCII[0] and timeline[-1] == SPARK_ASCII[-1]  # it grew
    header = next(line for line in text.splitlines() if line.startswith("  mem  333 MB "))
    assert set(header.split("333 MB ", 1)[1]) <= set(SPARK_ASCII)


def test_spyglass_view_shows_a_memory_profile(capsys: Capture) -> None:
    assert main([str(FIXTURES / "mem_simple.json"), "--width", "120"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "Possible leaks" in out and "memory    peak timeline" in out


def test_live_at_the_peak_has_its_column_when_the_profile_has_it(
    mem: dict[str, Any], render: Render
) -> None:
    """Newer profiles carry what each line held at the footprint's peak; a wide report
    shows it next to the gross figure, labelled, and an older profile is shown as before."""
    newer = copy.deepcopy(mem)
    for entry in newer["files"].values():
        for line in entry["lines"] + entry["functions"]:
            line["mem_live_at_peak_mb"] = 0.0
    path = next(iter(newer["files"]))
    newer["files"][path]["lines"][0]["mem_live_at_peak_mb"] = 12.5
    lineno = newer["files"][path]["lines"][0]["lineno"]
    wide = render(newer, width=140)
    heads = next(line for line in wide.splitlines() if line.startswith("line Python"))
    assert "memory    peak at peak" in heads
    assert "13.1 MB" in _row(wide, lineno)
    assert "at peak = MB the line held when the footprint was highest" in wide
    assert "gross" in wide
    older = render(mem, width=140)
    assert "at peak" not in older


def test_samples_left_out_are_said_not_silently_lost() -> None:
    """A run whose hooks could not record every sample has figures that are low: the
    report says so (the profile's counts were read by no reporter)."""
    import json

    profile = json.loads((FIXTURES / "mem_simple.json").read_text(encoding="utf-8"))
    assert "left out" not in _ascii(profile, 120)
    profile["dropped_memory_samples"] = 512
    text = " ".join(_ascii(profile, 120).split())
    assert "512 memory samples came faster than spyglass could record them" in text, text
    profile["dropped_samples"] = 3
    text = " ".join(_ascii(profile, 120).split())
    assert "3 CPU and 512 memory samples" in text, text
