"""Limits a test sets with `@pytest.mark.spyglass(cpu_s=…, memory_mb=…, copy_mb=…)`, judged
on the test's own profile, and the lines to blame when it goes over."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, NamedTuple

from spyglass.profile_model import memory_figures as memory
from spyglass.profile_model import queries as proc

# name: (what the test is judged on, its unit, the lines to blame by)
LIMITS = {
    "cpu_s": ("CPU time", "s", "cpu"),
    "memory_mb": ("memory footprint", "MiB", "memory"),
    "copy_mb": ("copies", "MiB", "copy"),
}
HEAVIEST = 3  # lines named in a failure


class Overrun(NamedTuple):
    name: str
    used: float
    limit: float


def parse_limits(kwargs: Mapping[str, Any]) -> dict[str, float]:
    """The marker's limits; ValueError naming what is wrong with them."""
    unknown = sorted(set(kwargs) - set(LIMITS))
    if unknown:
        raise ValueError(f"unknown limit {unknown[0]!r} (known: {', '.join(LIMITS)})")
    limits: dict[str, float] = {}
    for name, value in kwargs.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{name} must be a number of {LIMITS[name][1]} >= 0, not {value!r}")
        limits[name] = float(value)
    return limits


def used(profile: Mapping[str, Any]) -> dict[str, float]:
    figures = {"cpu_s": proc.cpu_s(profile)}
    if memory.is_profiled(profile):
        figures["memory_mb"] = float(profile.get("max_footprint_mb") or 0.0)
        figures["copy_mb"] = memory.copy_mb(profile)
    return figures


def overruns(profile: Mapping[str, Any], limits: Mapping[str, float]) -> list[Overrun]:
    figures = used(profile)
    return [
        Overrun(name, figures[name], limit)
        for name, limit in limits.items()
        if name in figures and figures[name] > limit
    ]


def _line_figure(line: Mapping[str, Any], by: str) -> float:
    if by == "cpu":
        return proc.cpu_s(line)
    if by == "copy":
        return memory.copy_mb(line)
    return memory.alloc_mb(line)


def heaviest_lines(
    profile: Mapping[str, Any], by: str, n: int = HEAVIEST, *, root: str | None = None
) -> list[str]:
    """The `n` lines that weigh most by `by` ("cpu", "memory", "copy"), one string each:
    "path:line  figure  source", paths under `root` relative to it."""
    rows = [
        (_line_figure(line, by), path, int(line["lineno"]), str(line.get("source") or ""))
        for path, entry in profile["files"].items()
        for line in entry["lines"]
    ]
    rows = sorted((r for r in rows if r[0] > 0), key=lambda r: (-r[0], r[1], r[2]))[:n]
    unit = "s" if by == "cpu" else " MiB allocated" if by == "memory" else " MiB copied"
    return [
        f"{_shown(path, root)}:{lineno}  {value:.3g}{unit}  {source.strip()}"
        for value, path, lineno, source in rows
    ]


def _shown(path: str, root: str | None) -> str:
    if root is None or not path.startswith(root.rstrip(os.sep) + os.sep):
        return path
    return os.path.relpath(path, root)


def failure_message(
    nodeid: str, profile: Mapping[str, Any], over: list[Overrun], *, root: str | None = None
) -> str:
    lines = [f"spyglass: {nodeid} went over its limits:"]
    for o in over:
        what, unit, by = LIMITS[o.name]
        lines.append(f"  {what} {o.used:.3g} {unit} > {o.name}={o.limit:g}; heaviest lines:")
        lines += [f"    {row}" for row in heaviest_lines(profile, by, root=root)] or [
            "    (none sampled)"
        ]
    return "\n".join(lines)
