"""The terminal report's Threads section: threads named alike but for their numbers (a
server's ``Thread-N (process_request_thread)``) as one row with their count and the spread
of their CPU, as the HTML page groups them (spyglass.reporters.thread_groups)."""

from __future__ import annotations

from spyglass.profile_model import queries as proc
from spyglass.reporters import thread_groups as tg
from spyglass.reporters.styled import Text

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from spyglass.reporters.terminal import _Report


def render_threads(report: _Report) -> None:
    """The threads, those named alike (numbers aside) as one row: a server's hundreds
    of request threads are one line with their count and the spread of their CPU."""
    from spyglass.reporters.terminal_text import STYLES, fmt_percent, fmt_seconds

    threads = report.profile["threads"]
    if len(threads) < 2:
        return
    groups = tg.group_threads(threads, group=report.rep.group_threads)
    report.out(Text())
    title = f"Threads ({len(threads)}"
    title += f" in {len(groups)} groups)" if len(groups) < len(threads) else ")"
    report.out(Text(title, style=STYLES["heading"]))
    report.first_w = max(len("count"), *(len(f"x{g.size}") for g in groups))
    report.show_wait = any(g.wait_s > 0 for g in groups)
    report.show_await = False  # a task's await is not its thread's time
    mem, report.mem = report.mem, None  # the memory columns are the lines' and functions'
    report.out(report.column_heads("thread", first="count"))
    limit = report.rep.max_functions
    for g in groups[:limit]:
        label = Text(g.name)
        if g.size > 1:
            low, high = fmt_seconds(g.min_cpu_s) or "0s", fmt_seconds(g.max_cpu_s) or "0s"
            spread = low if low == high else f"{low}-{high}"  # not "<0.01s-<0.01s"
            label.append(f"  {spread} each", style=STYLES["muted"])
        times = {
            "cpu_python_s": g.python_s,
            "cpu_native_s": g.native_s,
            "cpu_system_s": g.system_s,
            "wait_s": g.wait_s,
            "samples": g.samples,
        }
        report.out(report.row(f"x{g.size}" if g.size > 1 else "", times, label))
    report.mem = mem
    if len(groups) > limit:
        rest = groups[limit:]
        pct = fmt_percent(proc.percent(sum(g.cpu_s for g in rest), report.total)) or "0%"
        count = sum(g.size for g in rest)
        report.note(f"{count} more thread{'s' if count != 1 else ''} ({pct} of CPU in all)")


__all__ = ["render_threads"]
