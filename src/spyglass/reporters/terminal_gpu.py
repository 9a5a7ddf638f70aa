"""The GPU part of the terminal report: its columns and summary lines (docs/gpu.md).

Only used for profiles with GPU figures (``gpu_profiled``) or CUDA copies (``cuda_*_mb``):
a profile without them is shown exactly as before. Memory is recorded in units of 2^20
bytes and shown in MB of 10^6 bytes, as the memory columns are.
"""

from __future__ import annotations

from spyglass.profile_model.gpu_fields import is_profiled
from spyglass.reporters.styled import Text
from spyglass.reporters.terminal_memory import fmt_mb, fmt_rate

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

STYLE = "green"
HEADS = (("GPU%", 5), ("GPU mem", 7))
COPY_HEAD = ("GPU copy", 9)
DIRECTIONS = (("htod", "host to GPU"), ("dtoh", "GPU to host"), ("dtod", "GPU to GPU"))


def has_copies(profile: Mapping[str, Any]) -> bool:
    """Whether the run copied anything through a CUDA library's copy entry points."""
    return any(f"cuda_{d}_mb" in profile for d, _ in DIRECTIONS)


def copied_mb(figures: Mapping[str, Any]) -> float:
    return sum(float(figures.get(f"cuda_{d}_mb", 0.0)) for d, _ in DIRECTIONS)


def fmt_util(pct: float) -> str:
    """A utilisation as "87%"; empty for 0."""
    if pct <= 0:
        return ""
    return "<1%" if pct < 0.5 else f"{pct:.0f}%"


class GpuColumns:
    """GPU utilisation while a line ran and the GPU memory in use then (its mean), and the
    line's CUDA copies (MB/s over the run, all directions)."""

    def __init__(self, profile: Mapping[str, Any]) -> None:
        self.profile = profile
        self.nvml = is_profiled(profile)
        self.copies = has_copies(profile)
        self.elapsed_s = float(profile.get("elapsed_s") or 0.0)
        self.heads_ = (HEADS if self.nvml else ()) + ((COPY_HEAD,) if self.copies else ())

    def heads(self) -> Text:
        out = Text()
        for head, width in self.heads_:
            out.append(" " + head.rjust(width), style=f"bold {STYLE}")
        return out

    def cells(self, figures: Mapping[str, Any]) -> Text:
        out = Text()
        if self.nvml:
            util = fmt_util(float(figures.get("gpu_util_pct", 0.0)))
            out.append(" " + util.rjust(HEADS[0][1]), style=STYLE)
            mem = fmt_mb(float(figures.get("gpu_mem_mb", 0.0)))
            out.append(" " + mem.rjust(HEADS[1][1]), style=STYLE)
        if self.copies:
            rate = copied_mb(figures) / self.elapsed_s if self.elapsed_s > 0 else 0.0
            out.append(" " + fmt_rate(rate).rjust(COPY_HEAD[1]), style=STYLE)
        return out

    def blank(self) -> Text:
        return Text(" " * self.width)

    @property
    def width(self) -> int:
        return sum(width + 1 for _, width in self.heads_)


def summary(profile: Mapping[str, Any]) -> list[str]:
    """The run's GPU figures, per device when there are several, and what they stand for."""
    lines = []
    if has_copies(profile):
        parts = [
            f"{fmt_mb(float(profile.get(f'cuda_{d}_mb', 0.0))) or '0 MB'} {name}"
            for d, name in DIRECTIONS
        ]
        lines.append("CUDA copies: " + ", ".join(parts))
    if not is_profiled(profile):
        return lines
    devices = list(profile.get("gpu_devices") or [])
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


def notes(profile: Mapping[str, Any]) -> list[str]:
    """What the GPU columns mean."""
    out = []
    if is_profiled(profile):
        out += [
            "GPU% = the GPU's utilisation while the line ran",
            "GPU mem = GPU memory in use then (mean)",
        ]
    if has_copies(profile):
        out.append("GPU copy = MB/s the line copied to, from and between GPUs (CUDA)")
    return out


__all__ = ["GpuColumns", "copied_mb", "fmt_util", "has_copies", "is_profiled", "notes", "summary"]
