"""The GPU keys of a profile (docs/gpu.md), and their structural check: present only when
``gpu_profiled`` is true, then required with these types, so that every reader (reports,
merging) can rely on them as on the CPU and memory keys (profile_io.check_profile)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Callable

Check = Callable[[object], bool]


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _at_least_0(v: object) -> bool:
    return _number(v) and v >= 0  # type: ignore[operator]


def _percent(v: object) -> bool:
    return _at_least_0(v) and v <= 100  # type: ignore[operator]


def _fraction(v: object) -> bool:
    return _at_least_0(v) and v <= 1  # type: ignore[operator]


def _bool(v: object) -> bool:
    return isinstance(v, bool)


def _timeline(v: object) -> bool:
    return isinstance(v, list) and all(
        isinstance(p, list) and len(p) == 2 and _at_least_0(p[0]) and _number(p[1]) for p in v
    )


# (key, check, what it should be)
_FIGURES: tuple[tuple[str, Check, str], ...] = (
    ("util_pct", _percent, "a percentage"),
    ("mem_mb", _at_least_0, "a non-negative number"),
    ("peak_mem_mb", _at_least_0, "a non-negative number"),
    ("busy_s", _at_least_0, "a non-negative number"),
)
LINE: tuple[tuple[str, Check, str], ...] = (
    ("gpu_util_pct", _percent, "a percentage"),
    ("gpu_mem_mb", _at_least_0, "a non-negative number"),
    ("gpu_peak_mem_mb", _at_least_0, "a non-negative number"),
    ("gpu_busy_s", _at_least_0, "a non-negative number"),
    ("gpu_observed_s", _at_least_0, "a non-negative number"),
    ("gpu_share", _fraction, "a number from 0 to 1"),
)
DEVICE: tuple[tuple[str, Check, str], ...] = (
    ("index", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "an index"),
    ("name", lambda v: isinstance(v, str), "a string"),
    ("total_mem_mb", _at_least_0, "a non-negative number"),
    ("util_per_process", _bool, "true or false"),
    ("memory_per_process", _bool, "true or false"),
    *_FIGURES,
)
TOP: tuple[tuple[str, Check, str], ...] = (
    ("gpu_per_process", _bool, "true or false"),
    *LINE[:5],
    ("gpu_unattributed_busy_s", _at_least_0, "a non-negative number"),
    ("gpu_timeline", _timeline, "a list of [t_s, mb] pairs"),
    ("gpu_note", lambda v: v is None or isinstance(v, str), "a string or null"),
    ("gpu_devices", lambda v: isinstance(v, list) and len(v) > 0, "a non-empty list"),
)


def is_profiled(profile: Mapping[str, Any]) -> bool:
    return profile.get("gpu_profiled") is True


def _check(obj: object, spec: tuple[tuple[str, Check, str], ...], where: str) -> list[str]:
    if not isinstance(obj, dict):
        return [f"{where} should be an object"]
    out = []
    for key, check, what in spec:
        if key not in obj:
            out.append(f"{where}.{key} is missing" if where else f"{key} is missing")
        elif not check(obj[key]):
            out.append(f"{where}.{key} should be {what}" if where else f"{key} should be {what}")
    return out


def problems(doc: Mapping[str, Any]) -> list[str]:
    """The GPU keys' structural problems (none when the GPU was not profiled). Lines and
    functions are checked only when their containers are well formed."""
    if "gpu_profiled" in doc and doc["gpu_profiled"] is not True:
        return ["gpu_profiled should be true when present"]
    if not is_profiled(doc):
        return []
    out = _check(doc, TOP, "")
    devices = doc.get("gpu_devices")
    several = isinstance(devices, list) and len(devices) > 1
    for i, d in enumerate(devices if isinstance(devices, list) else []):
        out += _check(d, DEVICE, f"gpu_devices[{i}]")
    files = doc.get("files")
    for path, entry in files.items() if isinstance(files, dict) else ():
        for kind in ("lines", "functions"):
            items = entry.get(kind) if isinstance(entry, dict) else None
            for i, item in enumerate(items if isinstance(items, list) else []):
                where = f"files[{path!r}].{kind}[{i}]"
                out += _check(item, LINE, where)
                if several and isinstance(item, dict):
                    per = item.get("gpu_devices")
                    if not isinstance(per, list) or not all(
                        not _check(d, _FIGURES, "") for d in per
                    ):
                        out.append(f"{where}.gpu_devices should be a list of device figures")
    return out


__all__ = ["DEVICE", "LINE", "TOP", "is_profiled", "problems"]
