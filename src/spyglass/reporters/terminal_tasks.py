"""The terminal report's asyncio tasks: each task's time suspended at awaits, longest
first (the profile's ``tasks``); absent when no task awaited."""

from __future__ import annotations

from spyglass.reporters.styled import Text

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from typing import Any

    from spyglass.reporters.terminal import _Report

TOP_TASKS = 10


def render_tasks(report: _Report) -> None:
    """Up to TOP_TASKS tasks with their await time and coroutine; the rest in one line."""
    from spyglass.reporters.terminal_text import NUM_W, STYLES, fmt_seconds

    tasks: list[dict[str, Any]] = [
        t for t in report.profile.get("tasks") or [] if float(t.get("await_s", 0.0)) > 0
    ]
    if not tasks:
        return
    report.out(Text())
    report.out(Text(f"asyncio tasks ({len(tasks)})", style=STYLES["heading"]))
    heads = Text()
    heads.append("await".rjust(NUM_W), style=f"bold {STYLES['await']}")
    heads.append(f" {report.g.gutter} ", style=STYLES["rule"])
    heads.append("task (coroutine)", style=STYLES["heading"])
    report.out(heads)
    for task in tasks[:TOP_TASKS]:
        row = Text()
        row.append(fmt_seconds(float(task["await_s"])).rjust(NUM_W), style=STYLES["await"])
        row.append(f" {report.g.gutter} ", style=STYLES["rule"])
        row.append(str(task.get("name") or "?"))
        if task.get("coroutine"):
            row.append(f" ({task['coroutine']})", style=STYLES["muted"])
        report.out(row)
    rest = tasks[TOP_TASKS:]
    if rest:
        total = sum(float(t["await_s"]) for t in rest)
        report.say(f"+ {len(rest)} more tasks, {fmt_seconds(total, space=True)} in all")
