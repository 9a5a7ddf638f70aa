"""The terminal's ``--tree`` view: the call tree of the run (spyglass.reporters.call_tree)
in the report's columns: inclusive CPU, its Python / native / system split and wait, then
the branches and each function with where it spent its time (file:line, MB allocated)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spyglass.profile_model import queries as proc
from spyglass.reporters import call_tree as ct
from spyglass.reporters import terminal_memory as tm
from spyglass.reporters.styled import Text

if TYPE_CHECKING:
    from spyglass.reporters.terminal import _Report


def _where(node: ct.Node) -> str:
    line = node.main_line()
    base = node.file.rsplit("/", 1)[-1]
    return f"{base}:{line}" if line is not None else ""


def _label(node: ct.Node, folded: list[ct.Node], report: _Report) -> Text:
    from spyglass.reporters.terminal_text import STYLES

    label = Text()
    if folded:
        names = list(dict.fromkeys(n.function for n in folded))
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        label.append(f"[{len(folded)} calls folded: {shown}] ", style=STYLES["muted"])
    label.append(node.function, style="bold" if node.file in report.profile["files"] else "")
    where = _where(node)
    if where:
        label.append(f"  {where}", style=STYLES["muted"])
    if node.mem_alloc_mb > 0 and report.mem is not None:
        label.append(f"  {tm.fmt_mb(node.mem_alloc_mb)}", style=STYLES["muted"])
    return label


def render_tree(report: _Report) -> None:
    """Write the call tree of ``report``'s profile, pruned below its min_percent."""
    from spyglass.reporters.terminal_text import STYLES, UNICODE, fmt_percent

    profile = report.profile
    root = ct.build_tree(profile)
    report.out(Text())
    if not profile["stacks"]:
        report.say("No stacks were recorded: there is no call tree to show.")
        return
    rows, pruned = ct.tree_rows(
        root,
        min_percent=report.rep.min_percent,
        total_cpu=report.total,
        total_wait=float(profile["wait_s"]),
        total_await=proc.await_s(profile),
        unicode=report.g is UNICODE,
    )
    report.out(Text("Call tree (inclusive time, callers above callees)", style=STYLES["heading"]))
    report.first_w = 6
    report.show_wait = float(profile["wait_s"]) > 0
    report.show_await = proc.await_s(profile) > 0
    mem, report.mem = report.mem, None  # memory is in the label: the columns are CPU's
    report.out(report.column_heads("function", first="CPU"))
    for row in rows:
        first = fmt_percent(100.0 * row.node.cpu_s / report.total) if report.total > 0 else ""
        label = Text(row.prefix, style=STYLES["rule"])
        report.mem = mem
        label.append_text(_label(row.node, row.folded, report))
        report.mem = None
        report.out(report.row(first, row.node.as_times(), label))
    report.mem = mem
    if pruned:
        cut = f"{report.rep.min_percent:g}%"
        report.note(f"{pruned} calls below {cut} of CPU and of wait are not shown (--min-share)")


__all__ = ["render_tree"]
