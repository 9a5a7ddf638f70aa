"""The terminal report's native functions: under a line with native time, the native
functions that took it (shares of the line's native time); and a whole-run table of the
heaviest native functions with the line that led to each."""

from __future__ import annotations

from spyglass.profile_model import native_functions as nf
from spyglass.profile_model import queries as proc
from spyglass.reporters.styled import Text

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from spyglass.reporters.terminal import _Report

# Functions named under a line, and rows of the whole-run table.
TOP_PER_LINE = 3
TOP_FUNCTIONS = 10
# A line's native time must be at least this share of the run's CPU to be broken down
# (a breakdown of a few samples says little).
MIN_LINE_PERCENT = 2.0
# A function under a line is named when it took at least this share of the line's native time.
MIN_SHARE_PERCENT = 5.0


def _library(entry: Mapping[str, Any]) -> str:
    return nf.short_library(str(entry["library"]))


def _name(entry: Mapping[str, Any], width: int, ellipsis: str = "…", *, bare: bool = False) -> str:
    """The function's name; where it is only an address, the library's short name and the
    offset (`bare`: the offset alone, the library being named already)."""
    name = nf.short_name(str(entry["name"]))
    lib = str(entry["library"])
    if lib and name.startswith(lib + "+"):
        name = ("" if bare else _library(entry)) + name[len(lib) :]
    return name if len(name) <= width else name[: max(width - len(ellipsis), 1)] + ellipsis


def line_label(report: _Report, line: Mapping[str, Any]) -> Text | None:
    """The row under a line, indented past the line number:
    "↳ native in libpython3.11: list_sort_impl 62% · merge_at 30%"."""
    from spyglass.reporters.terminal_text import STYLES

    native_s = float(line["cpu_native_s"])
    entries = nf.entries(line)
    if not entries or proc.percent(native_s, report.total) < MIN_LINE_PERCENT or native_s <= 0:
        return None
    shown = [e for e in entries if 100 * float(e["cpu_s"]) / native_s >= MIN_SHARE_PERCENT]
    if not shown:
        return None
    arrow = "↳" if report.g.gutter == "│" else "->"
    libraries = {_library(e) for e in shown[:TOP_PER_LINE]}
    one = libraries.pop() if len(libraries) == 1 else None
    head = f"{arrow} native in {one}: " if one else f"{arrow} native: "
    label = Text(" " * (report.first_w + 1) + head, style=STYLES["muted"])
    for i, e in enumerate(shown[:TOP_PER_LINE]):
        if i:
            label.append(f" {report.g.dot} ", style=STYLES["muted"])
        label.append(_name(e, 40, report.g.ellipsis, bare=one is not None), style=STYLES["native"])
        share = round(100 * float(e["cpu_s"]) / native_s)
        label.append(f" {share}%", style=STYLES["muted"])
        if one is None:
            label.append(f" ({_library(e)})", style=STYLES["muted"])
    return label


def _where(entry: Mapping[str, Any]) -> str:
    lines = entry.get("lines")
    if not isinstance(lines, list) or not lines:
        return "(no profiled line)"
    first = lines[0]
    where = f"{str(first['file']).rsplit('/', 1)[-1]}:{first['lineno']}"
    return where + (f" +{len(lines) - 1}" if len(lines) > 1 else "")


def render_table(report: _Report) -> None:
    """The run's heaviest native functions: self time, library, the line that led there."""
    from spyglass.reporters.terminal_text import STYLES

    entries = nf.entries(report.profile)[:TOP_FUNCTIONS]
    if not entries:
        return
    report.out(Text())
    report.out(Text("Native functions (self time, and the line that led there)", style="bold"))
    name_w = min(max(len(_name(e, 48)) for e in entries), max(report.width // 3, 16))
    names = [_name(e, name_w, report.g.ellipsis) for e in entries]
    libs = [_library(e) for e in entries]
    lib_w = min(max(len(x) for x in libs), 18)
    cut = report.g.ellipsis
    libs = [x if len(x) <= lib_w else x[: lib_w - len(cut)] + cut for x in libs]
    for e, name, lib in zip(entries, names, libs):
        row = Text("  ")
        pct = proc.percent(float(e["cpu_s"]), report.total)
        row.append_text(report.pct_cell(pct, int(e["samples"]) < report.rep.min_samples, "bold"))
        row.append("  ")
        row.append(name.ljust(name_w), STYLES["native"])
        row.append("  ")
        row.append(lib.ljust(lib_w), STYLES["muted"])
        where = Text("  " + _where(e))
        where.truncate(max(report.width - row.cell_len, 1), overflow=report.overflow)
        row.append_text(where)
        report.out(row)


__all__ = ["line_label", "render_table"]
