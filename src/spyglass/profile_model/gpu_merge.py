"""The GPU figures of merged profiles (docs/gpu.md, "Merging").

Times add up: GPU-busy and observed seconds. Utilisation is recomputed from them
(observed-weighted, as one run of the inputs together would give it), mean memory is the
observed-weighted mean, peaks are the largest peak, shares are recomputed against the
merged run's GPU-busy time. Devices are matched by index. The result has per-process
figures only when every GPU input had them; notes are kept, each once. GPU memory
timelines add up as the memory ones do when the figures are per process, and are
interleaved when they are device-wide (every process read the same memory). Inputs
without GPU figures add none; the result has GPU keys when any input has.
"""

from __future__ import annotations

from spyglass.profile_model import memory_figures as memory
from spyglass.profile_model.gpu_fields import is_profiled

TYPE_CHECKING = False  # typing costs the end of every run with children milliseconds
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    Acc = dict[str, Any]
_KEY = "_gpu"  # where a line's or function's accumulator rides in the merger's dict


def _zero() -> Acc:
    return {"busy": 0.0, "util_obs": 0.0, "observed": 0.0, "mem_obs": 0.0, "peak": 0.0}


def _add_figures(
    acc: Acc, util_pct: float, mem: float, peak: float, busy: float, obs: float
) -> None:
    acc["busy"] += busy
    acc["util_obs"] += util_pct / 100.0 * obs
    acc["observed"] += obs
    acc["mem_obs"] += mem * obs
    acc["peak"] = max(acc["peak"], peak)


def _figures(acc: Acc) -> tuple[float, float]:
    obs = acc["observed"]
    util = min(100.0, 100.0 * acc["util_obs"] / obs) if obs > 0 else 0.0
    return round(util, 9), round(acc["mem_obs"] / obs, 9) if obs > 0 else 0.0


def add_line(into: dict[str, Any], line: Mapping[str, Any]) -> None:
    """Adds a line's or function's GPU figures into the merger's accumulator for it."""
    if "gpu_util_pct" not in line:
        return
    acc = into.setdefault(_KEY, {"all": _zero(), "devices": []})
    obs = float(line["gpu_observed_s"])
    _add_figures(
        acc["all"],
        float(line["gpu_util_pct"]),
        float(line["gpu_mem_mb"]),
        float(line["gpu_peak_mem_mb"]),
        float(line["gpu_busy_s"]),
        obs,
    )
    for i, d in enumerate(line.get("gpu_devices") or []):
        while len(acc["devices"]) <= i:
            acc["devices"].append(_zero())
        _add_figures(
            acc["devices"][i],
            float(d["util_pct"]),
            float(d["mem_mb"]),
            float(d["peak_mem_mb"]),
            float(d["busy_s"]),
            obs,
        )


class GpuRun:
    """The run-wide GPU figures of the inputs."""

    def __init__(self) -> None:
        self.on = False
        self.per_process = True
        self.all = _zero()
        self.unattributed = 0.0
        self.devices: list[dict[str, Any]] = []
        self.series: list[memory.Series] = []
        self.notes: list[str] = []

    def add(self, profile: Mapping[str, Any], offset_s: float) -> None:
        if not is_profiled(profile):
            return
        self.on = True
        self.per_process = self.per_process and bool(profile["gpu_per_process"])
        obs = float(profile["gpu_observed_s"])
        _add_figures(
            self.all,
            float(profile["gpu_util_pct"]),
            float(profile["gpu_mem_mb"]),
            float(profile["gpu_peak_mem_mb"]),
            float(profile["gpu_busy_s"]),
            obs,
        )
        self.unattributed += float(profile["gpu_unattributed_busy_s"])
        for i, d in enumerate(profile["gpu_devices"]):
            while len(self.devices) <= i:
                self.devices.append({"info": dict(d), "acc": _zero()})
            entry = self.devices[i]
            entry["info"]["util_per_process"] = bool(
                entry["info"]["util_per_process"] and d["util_per_process"]
            )
            entry["info"]["memory_per_process"] = bool(
                entry["info"]["memory_per_process"] and d["memory_per_process"]
            )
            _add_figures(
                entry["acc"],
                float(d["util_pct"]),
                float(d["mem_mb"]),
                float(d["peak_mem_mb"]),
                float(d["busy_s"]),
                obs,
            )
        end = float(profile["elapsed_s"])
        self.series.append(memory.Series(profile["gpu_timeline"], offset_s, end))
        note = profile.get("gpu_note")
        if note and note not in self.notes:
            self.notes.append(str(note))

    def line_out(self, acc: Mapping[str, Any]) -> dict[str, Any]:
        """A merged line's or function's GPU keys (zeros when no input had any for it)."""
        if not self.on:
            return {}
        merged = acc.get(_KEY) or {"all": _zero(), "devices": []}
        util, mem = _figures(merged["all"])
        busy = merged["all"]["busy"]
        out: dict[str, Any] = {
            "gpu_util_pct": util,
            "gpu_mem_mb": mem,
            "gpu_peak_mem_mb": merged["all"]["peak"],
            "gpu_busy_s": round(busy, 12),
            "gpu_observed_s": round(merged["all"]["observed"], 12),
            "gpu_share": min(1.0, round(busy / self.all["busy"], 12)) if self.all["busy"] else 0.0,
        }
        if len(self.devices) > 1:
            devices = list(merged["devices"])
            devices += [_zero() for _ in range(len(self.devices) - len(devices))]
            out["gpu_devices"] = [
                {
                    "util_pct": _figures(d)[0],
                    "mem_mb": _figures(d)[1],
                    "peak_mem_mb": d["peak"],
                    "busy_s": round(d["busy"], 12),
                }
                for d in devices
            ]
        return out

    def _timeline(self, cap: int) -> list[list[float]]:
        """Each process's own memory adds up (as step functions, each counting until its
        process ends). Device-wide readings are the same memory read by every process: they
        are shown as read, interleaved, not added."""
        if self.per_process:
            return memory.reduce(memory.sum_steps(self.series), cap)
        points = [[float(t) + s.shift_s, float(v)] for s in self.series for t, v in s.points]
        return _thinned(sorted(points), cap)

    def run_out(self, timeline_cap: int) -> dict[str, Any]:
        if not self.on:
            return {}
        util, mem = _figures(self.all)
        devices = []
        for i, entry in enumerate(self.devices):
            d_util, d_mem = _figures(entry["acc"])
            devices.append(
                {
                    **entry["info"],
                    "index": i,
                    "util_pct": d_util,
                    "mem_mb": d_mem,
                    "peak_mem_mb": entry["acc"]["peak"],
                    "busy_s": round(entry["acc"]["busy"], 12),
                }
            )
        return {
            "gpu_profiled": True,
            "gpu_per_process": self.per_process,
            "gpu_util_pct": util,
            "gpu_mem_mb": mem,
            "gpu_peak_mem_mb": self.all["peak"],
            "gpu_busy_s": round(self.all["busy"], 12),
            "gpu_observed_s": round(self.all["observed"], 12),
            "gpu_unattributed_busy_s": round(self.unattributed, 12),
            "gpu_devices": devices,
            "gpu_timeline": self._timeline(timeline_cap),
            "gpu_note": "; ".join(self.notes) if self.notes else None,
        }


def _thinned(points: Sequence[list[float]], cap: int) -> list[list[float]]:
    """At most `cap` points, evenly picked, the last one kept."""
    if len(points) <= cap:
        return list(points)
    step = len(points) / cap
    picked = [points[int(i * step)] for i in range(cap - 1)]
    return [*picked, points[-1]]


__all__ = ["GpuRun", "add_line"]
