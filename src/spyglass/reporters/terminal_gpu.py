"""The GPU part of the terminal report: its columns and summary lines (docs/gpu.md).

Only used for profiles with GPU figures (``gpu_profiled``): a profile without them is shown
exactly as before. Memory is recorded in units of 2^20 bytes and shown in MB of 10^6 bytes,
as the memory columns are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spyglass.profile_model.gpu_fields import is_profiled
from spyglass.reporters.styled import Text
from spyglass.reporters.terminal_memory import fmt_mb

STYLE = "green"
HEADS = (("GPU%", 5), ("GPU mem", 7))


def fmt_util(pct: float) -> str:
    """A utilisation as "87%"; empty for 0."""
    if pct <= 0:
        return ""
    return "<1%" if pct < 0.5 else f"{pct:.0f}%"


class GpuColumns:
    """GPU utilisation while a line ran and the GPU memory in use then (its mean)."""

    def __init__(self, profile: Mapping[str, Any]) -> None:
        self.profile = profile

    def heads(self) -> Text:
        out = Text()
        for head, width in HEADS:
            out.append(" " + head.rjust(width), style=f"bold {STYLE}")
        return out

    def cells(self, figures: Mapping[str, Any]) -> Text:
        out = Text()
        util = fmt_util(float(figures.get("gpu_util_pct", 0.0)))
        out.append(" " + util.rjust(HEADS[0][1]), style=STYLE)
        mem = fmt_mb(float(figures.get("gpu_mem_mb", 0.0)))
        out.append(" " + mem.rjust(HEADS[1][1]), style=STYLE)
        return out

    def blank(self) -> Text:
        return Text(" " * sum(width + 1 for _, width in HEADS))

    @property
    def width(self) -> int:
        return sum(width + 1 for _, width in HEADS)


def summary(profile: Mapping[str, Any]) -> list[str]:
    """The run's GPU figures, per device when there are several, and what they stand for."""
    devices = list(profile.get("gpu_devices") or [])
    lines = []
    for d in devices:
        name = str(d.get("name") or f"GPU {d.get('index', '?')}")
        util = fmt_util(float(d.get("util_pct", 0.0))) or "0%"
        peak = fmt_mb(float(d.get("peak_mem_mb", 0.0))) or "0 MB"
        lines.append(f"{name}: {util} busy on average, {peak} at most in use")
    if not profile.get("gpu_per_process", False):
        lines.append(
            "GPU figures are the whole device's: the driver gives no per-process figures, "
            "so other processes' work on the GPU is included"
        )
    note = profile.get("gpu_note")
    if note:
        lines.append(str(note))
    return lines


def notes() -> list[str]:
    """What the GPU columns mean."""
    return [
        "GPU% = the GPU's utilisation while the line ran",
        "GPU mem = GPU memory in use then (mean)",
    ]


__all__ = ["GpuColumns", "fmt_util", "is_profiled", "notes", "summary"]
