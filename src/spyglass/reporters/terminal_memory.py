"""The memory part of the terminal report: its columns, summary lines and leaks section.

Only used for profiles with memory figures (``memory_profiled``); the terminal reporter
(:mod:`spyglass.reporters.terminal`) asks this module for text and lays it out. Volumes are
recorded in the profile in units of 2^20 bytes and shown in MB of 10^6 bytes.
"""

from __future__ import annotations

from spyglass.profile_model import memory_figures as memory
from spyglass.reporters.styled import Text

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

STYLES = {
    "memory": "blue",
    "python": "cyan",
    "peak": "blue",
    "spark": "bright_blue",
    "copy": "bright_red",
    "leak": "bold red",
    "muted": "dim",
    "heading": "bold",
}

SPARK_UNICODE = "▁▂▃▄▅▆▇█"
# Eight levels that read as rising in any font.
SPARK_ASCII = "_.-~=+*#"

#: The source column never gets narrower than this to make room for memory columns.
SOURCE_MIN = 20


class Column:
    __slots__ = ("head", "key", "width")

    def __init__(self, key: str, head: str, width: int) -> None:
        self.key = key
        self.head = head
        self.width = width


#: Memory columns in the order they are given up when the report is too narrow (last first).
COLUMNS = (
    Column("alloc", "memory", 15),  # "12.0 MB  87% py"
    Column("peak", "peak", 7),
    Column("held", "at peak", 7),  # live at the footprint's peak (profiles that have it)
    Column("timeline", "timeline", 8),
    Column("copy", "copy", 9),  # "123 MB/s"
)


#: Bytes in the profile's "MB" (its *_mb fields count 2^20 bytes).
PROFILE_MB = 1 << 20
#: Bytes in a report's MB: 10^6, as memray and most tools count them (the legend says so).
SHOWN_MB = 1_000_000


def fmt_mb(value: float) -> str:
    """MB of the profile (2^20 bytes) shown as MB of 10^6 bytes, in at most 7 characters
    ("0.4 MB", "12.0 MB", "318 MB", "1.2 GB"); empty for 0."""
    value = value * PROFILE_MB / SHOWN_MB
    if value <= 0:
        return ""
    if value < 0.05:
        return "<0.1 MB"
    if value < 99.95:
        return f"{value:.1f} MB"
    if value < 999.5:
        return f"{value:.0f} MB"
    return f"{value / 1000:.1f} GB"


def fmt_rate(mb_s: float) -> str:
    """MB/s in at most 9 characters; empty for 0."""
    text = fmt_mb(mb_s)
    return f"{text}/s" if text else ""


def fmt_python(fraction: float) -> str:
    """Python's share of an allocation: "87% py"."""
    return f"{round(100 * fraction):.0f}% py"


def sparkline(values: Sequence[float], unicode: bool) -> str:
    """One character per value, from the lowest block (0, or the lowest value when some are
    negative) to the highest (the largest value)."""
    if not values:
        return ""
    levels = SPARK_UNICODE if unicode else SPARK_ASCII
    lo, hi = min(0.0, *values), max(values)
    if hi <= lo:
        return levels[0] * len(values)
    top = len(levels) - 1
    return "".join(levels[round(top * (v - lo) / (hi - lo))] for v in values)


def location(path: str, lineno: int | None) -> str:
    """``file.py:12``, the way the report names lines."""
    base = path.rsplit("/", 1)[-1]
    return base if lineno is None else f"{base}:{lineno}"


def _has_live_figures(profile: Mapping[str, Any]) -> bool:
    return any(
        "mem_live_at_peak_mb" in line
        for entry in profile["files"].values()
        for line in entry["lines"]
    )


def available_columns(profile: Mapping[str, Any] | None) -> tuple[Column, ...]:
    """The columns a profile has figures for: profiles from before live bytes were tracked
    have no "at peak" figure."""
    if profile is None or _has_live_figures(profile):
        return COLUMNS
    return tuple(c for c in COLUMNS if c.key != "held")


def choose_columns(
    width: int, fixed: int, profile: Mapping[str, Any] | None = None
) -> tuple[Column, ...]:
    """The memory columns that fit a table ``width`` wide whose other columns (line number,
    CPU figures, gutter) take ``fixed``, leaving the source at least SOURCE_MIN."""
    room = width - fixed - SOURCE_MIN
    chosen: list[Column] = []
    for column in available_columns(profile):
        if room < column.width + 1:
            break
        chosen.append(column)
        room -= column.width + 1
    return tuple(chosen)


class MemoryColumns:
    """The memory columns of the line and function tables of one report."""

    def __init__(self, profile: Mapping[str, Any], columns: tuple[Column, ...], unicode: bool):
        available = available_columns(profile)
        self.columns = tuple(c for c in columns if c in available)
        self.unicode = unicode
        self.elapsed_s = float(profile["elapsed_s"])
        self.dropped = [c.head for c in available if c not in self.columns]

    def heads(self) -> Text:
        heads = Text()
        for column in self.columns:
            heads.append(" " + column.head.rjust(column.width), style=f"bold {STYLES['memory']}")
        return heads

    def blank(self) -> Text:
        return Text(" " * sum(c.width + 1 for c in self.columns))

    def cells(self, entry: Mapping[str, Any]) -> Text:
        line = Text()
        for column in self.columns:
            line.append(" ")
            line.append_text(self._cell(column, entry))
        return line

    def _cell(self, column: Column, entry: Mapping[str, Any]) -> Text:
        if column.key == "alloc":
            alloc = memory.alloc_mb(entry)
            if alloc <= 0:
                return Text(" " * column.width)
            cell = Text(f"{fmt_mb(alloc):>7} ", style=STYLES["memory"])
            cell.append(f"{fmt_python(memory.python_fraction(entry)):>7}", style=STYLES["python"])
            return cell
        if column.key == "held":
            held = float(entry.get("mem_live_at_peak_mb") or 0.0)
            return Text(fmt_mb(held).rjust(column.width), style=STYLES["peak"])
        if column.key == "peak":
            peak = float(entry.get("mem_peak_mb") or 0.0)
            return Text(fmt_mb(peak).rjust(column.width), style=STYLES["peak"])
        if column.key == "timeline":
            points = entry.get("mem_timeline") or []
            values = memory.resample(points, column.width, self.elapsed_s)
            return Text(sparkline(values, self.unicode).ljust(column.width), style=STYLES["spark"])
        rate = float(entry.get("copy_mb_s") or 0.0)
        return Text(fmt_rate(rate).rjust(column.width), style=STYLES["copy"])


def summary_lines(
    profile: Mapping[str, Any], *, indent: int, spark_width: int, unicode: bool, dot: str
) -> list[Text]:
    """The header's memory lines: the largest footprint with a sparkline of the footprint
    over the run, where it was reached, the allocation (Python's share), copies and what
    threads without Python allocated."""
    peak = float(profile["max_footprint_mb"])
    first = Text()
    first.append(f"  mem {fmt_mb(peak) or '0 MB':>7} ", style="bold")
    points = profile["footprint_timeline"]
    elapsed = float(profile["elapsed_s"])
    values = memory.resample(points, spark_width, elapsed) if spark_width > 0 else []
    first.append(sparkline(values, unicode), style=STYLES["spark"])
    pad = " " * indent
    where = Text(pad + "max footprint", style=STYLES["muted"])
    if profile["max_footprint_file"]:
        where.append(" (at ", style=STYLES["muted"])
        where.append(location(profile["max_footprint_file"], profile["max_footprint_lineno"]))
        where.append(")", style=STYLES["muted"])
    if values:
        where.append(" and the footprint over the run", style=STYLES["muted"])
    alloc = memory.alloc_mb(profile)
    totals = Text(pad)
    totals.append(f"allocated {fmt_mb(alloc) or '0 MB'}", style=STYLES["memory"])
    if alloc > 0:
        totals.append(", ")
        totals.append(f"{round(100 * memory.python_fraction(profile))}% Python", STYLES["python"])
    totals.append(f" {dot} ", style=STYLES["muted"])
    copied = memory.copy_mb(profile)
    rate = fmt_rate(float(profile["copy_mb_s"])) or "0 MB/s"
    totals.append(f"copied {fmt_mb(copied) or '0 MB'}, {rate}", style=STYLES["copy"])
    lines = [first, where, totals]
    native = float(profile["native_thread_alloc_mb"])
    if native > 0:
        lines.append(
            Text(
                pad + f"native threads (no Python frame) allocated {fmt_mb(native)}",
                STYLES["muted"],
            )
        )
    return lines


def leak_lines(profile: Mapping[str, Any], *, width: int, overflow: Any) -> list[Text]:
    """The "Possible leaks" section: empty when the run found none."""
    found = memory.leaks(profile)
    if not found:
        return []
    lines = [Text(), Text("Possible leaks", style=STYLES["heading"])]
    places = [location(k.path, k.lineno) for k in found]
    place_w = min(max(len(p) for p in places), 28)
    for leak, place in zip(found, places):
        line = Text("  ")
        line.append(f"{100 * leak.likelihood:>3.0f}%", style=STYLES["leak"])
        line.append(f" {fmt_rate(leak.rate_mb_s) or '0 MB/s':>9}", style=STYLES["memory"])
        line.append("  " + place[-place_w:].ljust(place_w) + "  ")
        text = str(leak.line["source"]).strip() if leak.line is not None else ""
        source = Text(text)
        source.truncate(max(width - line.cell_len, 1), overflow=overflow)
        lines.append(line.append_text(source))
    lines.append(
        Text(
            "  confidence that its live memory keeps growing, and how fast",
            style=STYLES["muted"],
        )
    )
    return lines


def hidden_alloc_mb(profile: Mapping[str, Any], path: str, shown: Sequence[Any]) -> float:
    """MB allocated by the lines of ``path`` that a table leaves out."""
    shown_nos = {int(ln["lineno"]) for ln in shown}
    lines = profile["files"][path]["lines"]
    return sum(memory.alloc_mb(ln) for ln in lines if int(ln["lineno"]) not in shown_nos)


def notes(columns: MemoryColumns) -> list[str]:
    """What the memory columns mean, and which ones a wider terminal would show."""
    shown = {c.key for c in columns.columns}
    parts = []
    if "alloc" in shown:
        parts.append("MB = 10^6 bytes")
        parts.append("memory = MB allocated, gross (py: through Python's allocator)")
    if "held" in shown:
        parts.append("at peak = MB the line held when the footprint was highest")
    if "peak" in shown:
        parts.append("peak = most MB one execution held")
    if "copy" in shown:
        parts.append("copy = MB/s copied")
    if "timeline" in shown:
        parts.append("timeline = the footprint while the line ran")
    if columns.dropped:
        parts.append("a wider report also shows " + ", ".join(columns.dropped))
    return parts


__all__ = [
    "COLUMNS",
    "SOURCE_MIN",
    "MemoryColumns",
    "available_columns",
    "choose_columns",
    "fmt_mb",
    "fmt_python",
    "fmt_rate",
    "leak_lines",
    "sparkline",
    "summary_lines",
]
