"""The terminal reports' own styled text (reporters/styled.py): cell widths, cutting to a
width, tab stops and colour, checked against what the reports need and, where rich is
installed, against rich's rendering of the same text, which the reports used before."""

from __future__ import annotations

import io

import pytest

from spyglass.reporters.styled import Console, Text, cell_len

SAMPLES = [
    "plain ascii source line",
    "    for i in range(n):\ttotal += i  # a tab",
    "名前 = '東京'  # wide characters take two cells",
    "e\u0301te\u0301 combining marks take none",
    "mixed 名 and ascii and \t tabs \t twice",
    "x" * 130,
]


def test_cell_widths() -> None:
    assert cell_len("abc") == 3
    assert cell_len("東京") == 4
    assert cell_len("e\u0301") == 1
    assert cell_len("a\tb") == 2  # a tab takes no cell until it is expanded


def test_ellipsis_and_crop_keep_to_the_width() -> None:
    for width in (5, 12, 40):
        for sample in SAMPLES:
            for overflow in ("ellipsis", "crop"):
                text = Text(sample)
                text.truncate(width, overflow=overflow)
                assert text.cell_len <= width
                if cell_len(sample) > width and overflow == "ellipsis":
                    assert text.plain.endswith("…")
    cut = Text("東京東京")
    cut.truncate(3, overflow="crop")  # a wide character straddling the edge
    assert cut.plain == "東 " and cut.cell_len == 2 + 1


def test_tabs_stop_every_four_cells() -> None:
    out = io.StringIO()
    Console(out, width=80, color=False).print(Text("a\tbc\td"), no_wrap=True)
    assert out.getvalue() == "a   bc  d\n"


def test_colour_is_sgr_per_run_and_absent_without_colour() -> None:
    text = Text("CPU ", style="bold").append("Python", style="cyan")
    coloured, plain = io.StringIO(), io.StringIO()
    Console(coloured, width=80, color=True).print(text, no_wrap=True)
    Console(plain, width=80, color=False).print(text, no_wrap=True)
    assert coloured.getvalue() == "\x1b[1mCPU \x1b[0m\x1b[1;36mPython\x1b[0m\n"
    assert plain.getvalue() == "CPU Python\n"


def test_fold_breaks_a_long_line_at_the_width() -> None:
    out = io.StringIO()
    Console(out, width=10, color=False).print(Text("x" * 25), overflow="fold", crop=False)
    assert out.getvalue().splitlines() == ["x" * 10, "x" * 10, "x" * 5]


@pytest.mark.parametrize("width", [20, 47, 80])
@pytest.mark.parametrize("sample", SAMPLES)
def test_same_text_as_rich(sample: str, width: int) -> None:
    rich_console = pytest.importorskip("rich.console")
    rich_text = pytest.importorskip("rich.text")
    for overflow in ("ellipsis", "crop"):
        theirs = io.StringIO()
        rich_console.Console(
            file=theirs, width=width, color_system=None, highlight=False, tab_size=4
        ).print(rich_text.Text(sample), no_wrap=True, overflow=overflow, crop=True)
        ours = io.StringIO()
        Console(ours, width=width, color=False).print(
            Text(sample), no_wrap=True, overflow=overflow, crop=True
        )
        assert ours.getvalue() == theirs.getvalue(), (sample, width, overflow)
