"""The whole run's hottest lines, libraries included, read from the profile's stacks: what
a report shows when nothing ran in the profiled files, so that it is never empty while the
run did use CPU (and it can say where, and how to report it)."""

from __future__ import annotations

from spyglass.profile_model import queries as proc

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any


class FrameLine:
    __slots__ = ("cpu_s", "function", "lineno", "path", "percent", "samples")

    def __init__(
        self, path: str, lineno: int, function: str, cpu_s: float, percent: float, samples: int
    ) -> None:
        self.path = path
        self.lineno = lineno
        self.function = function
        self.cpu_s = cpu_s
        self.percent = percent  # of the run's total CPU
        self.samples = samples


def hottest_frames(profile: Mapping[str, Any], n: int) -> list[FrameLine]:
    """The `n` lines with the most CPU of their own (innermost in the stacks), whatever
    file they are in."""
    frames: Sequence[Mapping[str, Any]] = profile.get("frames") or []
    own: dict[int, list[float]] = {}
    for stack in profile.get("stacks") or []:
        indexes = stack.get("frames") or []
        if not indexes:
            continue
        figures = own.setdefault(int(indexes[-1]), [0.0, 0.0])  # stacks run outermost first
        figures[0] += proc.cpu_s(stack)
        figures[1] += int(stack.get("samples") or 0)
    by_line: dict[tuple[str, int], list[Any]] = {}
    for index, (cpu, samples) in own.items():
        if not 0 <= index < len(frames) or cpu <= 0:
            continue
        frame = frames[index]
        key = (str(frame["file"]), int(frame["lineno"]))
        entry = by_line.setdefault(key, [str(frame["function"]), 0.0, 0])
        entry[1] += cpu
        entry[2] += int(samples)
    total = proc.total_cpu(dict(profile))
    hottest = sorted(by_line.items(), key=lambda item: (-item[1][1], item[0]))[:n]
    return [
        FrameLine(path, lineno, function, cpu, proc.percent(cpu, total), samples)
        for (path, lineno), (function, cpu, samples) in hottest
    ]


def short_location(path: str, lineno: int) -> str:
    """`pkg/file.py:12`: the file with its directory, which names the package it is in."""
    parts = path.rstrip("/").split("/")
    return f"{'/'.join(parts[-2:]) if len(parts) > 2 else path}:{lineno}"
