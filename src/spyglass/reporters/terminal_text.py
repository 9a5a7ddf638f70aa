"""What every terminal report shares: styles, glyphs, number formats, the report's width
and its console (the profile's report, the diff's, and their sections)."""

from __future__ import annotations

import codecs
import os

from spyglass.reporters.styled import Console

TYPE_CHECKING = False  # typing costs the end of every run milliseconds
if TYPE_CHECKING:
    from typing import IO

STYLES = {
    "python": "cyan",
    "native": "green",
    "system": "yellow",
    "wait": "magenta",
    "await": "blue",
    "heading": "bold",
    "path": "bold",
    "rule": "bright_black",
    "muted": "dim",
    "error": "bold red",
}


class Glyphs:
    __slots__ = ("bars", "dot", "elision", "ellipsis", "gutter")

    def __init__(
        self, elision: str, ellipsis: str, gutter: str, dot: str, bars: tuple[str, str, str]
    ) -> None:
        self.elision = elision
        self.ellipsis = ellipsis
        self.gutter = gutter
        self.dot = dot
        self.bars = bars


UNICODE = Glyphs("⋮", "…", "│", "·", ("█", "▓", "░"))
ASCII = Glyphs(":", "...", "|", "-", ("#", "=", "-"))

ROUGH = "~"  # prefix of figures resting on fewer than MIN_SAMPLES samples
NUM_W = 6  # width of a percentage or wait column: "~48.1%", "13.95s"
PIPE_WIDTH = 120  # columns of a report written to a pipe or a file


_ASCII_SPACES = {ord(c): " " for c in "\t\n\x0b\x0c\r"}


def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` cut into lines of at most ``width`` characters at its spaces, the first
    after ``indent`` and the others after as many spaces; a word longer than a line is
    cut. textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=...,
    break_on_hyphens=False) on prose, without textwrap, which imports re."""
    lines: list[str] = []
    words: list[str] = []
    used = 0  # characters of `words` with the spaces between them

    def room() -> int:
        return max(width - len(indent), 1)

    def flush() -> None:
        nonlocal words, used, indent
        lines.append(indent + " ".join(words))
        indent = " " * len(indent)
        words, used = [], 0

    # textwrap's words: what lies between ASCII whitespace (a no-break space joins).
    for word in text.translate(_ASCII_SPACES).split(" "):
        if not word:
            continue
        while word:
            gap = 1 if words else 0
            if used + gap + len(word) <= room():
                words.append(word)
                used += gap + len(word)
                break
            if len(word) > room():  # too long for any line: fill this one with its start
                space = room() - used - gap
                if space > 0:
                    words.append(word[:space])
                    used += gap + space
                    word = word[space:]
            if words:
                flush()
    if words:
        flush()
    return lines


def supports_unicode(out: IO[str]) -> bool:
    encoding = getattr(out, "encoding", None) or "utf-8"
    try:
        return codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return False


def fmt_percent(value: float) -> str:
    """A percentage in at most 5 characters; empty for zero."""
    if value <= 0:
        return ""
    if value < 0.1:
        return "<0.1%"
    if value >= 99.95:
        return "100%"
    return f"{value:.1f}%"


def fmt_seconds(value: float, *, space: bool = False) -> str:
    """Seconds in at most 6 characters ("0.83s", "13.9s", "1234s"); empty for zero."""
    unit = " s" if space else "s"
    if value <= 0:
        return ""
    if value < 0.005:
        return f"<0.01{unit}"
    if value < 9.995:
        return f"{value:.2f}{unit}"
    if value < 99.95:
        return f"{value:.1f}{unit}"
    return f"{value:.0f}{unit}"


def shorten_path(path: str, width: int, ellipsis: str) -> str:
    """``path`` cut from the left to fit ``width`` characters, keeping whole components."""
    if len(path) <= width:
        return path
    room = width - len(ellipsis)
    tail = path[-room:] if room > 0 else ""
    cut = tail.find("/")
    if 0 <= cut < len(tail) - 1 and len(tail) - cut > room // 2:
        tail = tail[cut:]
    return ellipsis + tail


def report_width(out: IO[str], width: int | None) -> int | None:
    """The width to lay a report out in: ``width`` when given, else the terminal's (None:
    the console asks the terminal, or COLUMNS); into a pipe or a file, COLUMNS or PIPE_WIDTH, so
    that CI logs show the source lines rather than 80 columns of them."""
    if width is not None:
        return width
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) >= 40:
        return int(columns)
    try:
        if out.isatty():
            return None
    except (AttributeError, OSError, ValueError):
        pass
    return PIPE_WIDTH


def make_console(out: IO[str], *, width: int | None, color: bool) -> Console:
    """The console a report writes with: colour only when `color` is on; the profile's
    strings are written as they are (no markup or emoji is interpreted), and a closed pipe
    raises BrokenPipeError for the caller to handle."""
    return Console(out, width=width, color=color, tab_size=4)


__all__ = [
    "ASCII",
    "NUM_W",
    "PIPE_WIDTH",
    "ROUGH",
    "STYLES",
    "UNICODE",
    "Glyphs",
    "fmt_percent",
    "fmt_seconds",
    "make_console",
    "report_width",
    "shorten_path",
    "supports_unicode",
]
