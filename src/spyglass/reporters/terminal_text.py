"""What every terminal report shares: styles, glyphs, number formats, the report's width
and its rich console (the profile's report, the diff's, and their sections)."""

from __future__ import annotations

import codecs
import errno
import os
from typing import NamedTuple, TextIO

from rich.console import Console

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


class Glyphs(NamedTuple):
    elision: str
    ellipsis: str
    gutter: str
    dot: str
    bars: tuple[str, str, str]


UNICODE = Glyphs("⋮", "…", "│", "·", ("█", "▓", "░"))
ASCII = Glyphs(":", "...", "|", "-", ("#", "=", "-"))

ROUGH = "~"  # prefix of figures resting on fewer than MIN_SAMPLES samples
NUM_W = 6  # width of a percentage or wait column: "~48.1%", "13.95s"
PIPE_WIDTH = 120  # columns of a report written to a pipe or a file


def supports_unicode(out: TextIO) -> bool:
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


def report_width(out: TextIO, width: int | None) -> int | None:
    """The width to lay a report out in: ``width`` when given, else the terminal's (None:
    rich asks the terminal, or COLUMNS); into a pipe or a file, COLUMNS or PIPE_WIDTH, so
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


def make_console(out: TextIO, *, width: int | None, color: bool) -> Console:
    """A rich console for a report: plain text when `color` is off, no markup or emoji
    interpretation of the profile's strings, errors on a closed pipe left to the caller."""
    return _Console(
        file=out,
        width=width,
        color_system="auto" if color else None,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=False,
        legacy_windows=False,
        force_jupyter=False,
        force_interactive=False,
        tab_size=4,
    )


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # Newer rich points stdout at /dev/null and exits the process here, whatever file
        # broke; a reporter must leave that to its caller (which still has the run's exit
        # status to leave with).
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


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
