"""Profiles given GPU figures, for the readers' tests: they need no GPU and no fake NVML."""

from __future__ import annotations

import copy
from typing import Any


def with_gpu(profile: dict[str, Any], *, per_process: bool = True) -> dict[str, Any]:
    """`profile` as if one GPU had been read during half of each line's CPU time: at 50%
    with 100 MB in use, except the hottest line, at 100% with 1000 MB."""
    doc = copy.deepcopy(profile)
    busy = observed = 0.0
    for entry in doc["files"].values():
        hottest = max(entry["lines"], key=lambda x: x["cpu_python_s"])
        for item in [*entry["lines"], *entry["functions"]]:
            hot = item is hottest
            seen = (item["cpu_python_s"] + item["cpu_native_s"]) / 2
            util = 0.0 if seen == 0 else 100.0 if hot else 50.0
            item.update(
                gpu_util_pct=util,
                gpu_mem_mb=1000.0 if hot else 100.0,
                gpu_peak_mem_mb=1000.0 if hot else 100.0,
                gpu_busy_s=seen * util / 100,
                gpu_observed_s=seen,
                gpu_share=0.0,
            )
        for item in entry["lines"]:
            busy += item["gpu_busy_s"]
            observed += item["gpu_observed_s"]
    for entry in doc["files"].values():
        for item in [*entry["lines"], *entry["functions"]]:
            item["gpu_share"] = min(1.0, item["gpu_busy_s"] / busy)
    device = {
        "index": 0,
        "name": "Test GPU",
        "total_mem_mb": 16000.0,
        "util_per_process": per_process,
        "memory_per_process": per_process,
        "util_pct": 100 * busy / observed,
        "mem_mb": 300.0,
        "peak_mem_mb": 1000.0,
        "busy_s": busy,
    }
    doc.update(
        gpu_profiled=True,
        gpu_per_process=per_process,
        gpu_util_pct=100 * busy / observed,
        gpu_mem_mb=300.0,
        gpu_peak_mem_mb=1000.0,
        gpu_busy_s=busy,
        gpu_observed_s=observed,
        gpu_unattributed_busy_s=0.0,
        gpu_devices=[device],
        gpu_timeline=[[0.0, 100.0], [1.0, 1000.0]],
        gpu_note=None,
    )
    return doc
