"""The task table of a cluster job's profile (spyglass.dask): which task type spent what,
added up over the job's workers, with each type's heaviest line, as text lines."""

from __future__ import annotations

import os

from spyglass.profile_model import queries as proc
from spyglass.profile_model.task_types import by_task

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

TOP_TASKS = 10


def task_rows(profile: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = profile.get("task_types")
    if not isinstance(rows, list):
        return []
    return [r for r in rows if isinstance(r, dict) and "task" in r and "wait_s" in r]


def tasks_table(rows: list[dict[str, Any]], n: int) -> list[str]:
    """The `n` task types that used the most CPU, one line each, with the line of theirs
    that used the most (file name and line number)."""
    totals = by_task(rows)[:n]
    mem = any("mem_alloc_mb" in r for r in rows)
    head = f"{'CPU s':>8} {'Python':>7} {'native':>7} {'system':>7} {'wait s':>8}"
    head += f" {'alloc MB':>9}" if mem else ""
    lines = [f"task types by CPU ({len(totals)} of {len(by_task(rows))}):"]
    lines.append(head + f" {'workers':>7}  task (heaviest line)")
    heaviest = _heaviest_lines(rows)
    for t in totals:
        cpu = proc.cpu_s(t)
        row = f"{cpu:8.3f} " + " ".join(
            f"{100 * t[k] / cpu if cpu > 0 else 0.0:6.1f}%"
            for k in ("cpu_python_s", "cpu_native_s", "cpu_system_s")
        )
        row += f" {t['wait_s']:8.3f}"
        if mem:
            row += f" {t.get('mem_alloc_mb', 0.0):9.1f}"
        row += f" {t['processes']:7d}  {t['task']}"
        place = heaviest.get((t["task"], t["file"]))
        if place is not None:
            row += f" ({os.path.basename(place[0])}:{place[1]})"
        lines.append(row)
    return lines


def _heaviest_lines(rows: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[str, int]]:
    cpu: dict[tuple[str, str], dict[tuple[str, int], float]] = {}
    for row in rows:
        into = cpu.setdefault((str(row["task"]), str(row.get("file") or "")), {})
        for line in row.get("lines") or []:
            place = (str(line["file"]), int(line["lineno"]))
            into[place] = into.get(place, 0.0) + float(line["cpu_s"])
    return {key: max(places, key=lambda p: places[p]) for key, places in cpu.items() if places}
