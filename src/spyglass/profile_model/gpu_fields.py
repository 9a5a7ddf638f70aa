"""The GPU keys' rule (docs/gpu.md): present exactly when ``gpu_profiled`` is true, and then
required with the kinds the field table gives them (fields.py, presence "gpu"; a device's
and a line's per-device figures are the gpu_device and gpu_line_device levels), so that
every reader (reports, merging) can rely on them as on the CPU and memory keys."""

from __future__ import annotations

from spyglass.profile_model import fields
from spyglass.profile_model.kinds import kind

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def is_profiled(profile: Mapping[str, Any]) -> bool:
    return profile.get("gpu_profiled") is True


def _check(obj: object, level: str, presence: str, where: str) -> list[str]:
    if not isinstance(obj, dict):
        return [f"{where} should be an object"]
    out = []
    for f in fields.at(level):
        if f.presence != presence:
            continue
        at = f"{where}.{f.name}" if where else f.name
        if f.name not in obj:
            out.append(f"{at} is missing")
        elif not kind(f.kind).check(obj[f.name]):
            out.append(f"{at} should be {kind(f.kind).expected}")
    return out


def problems(doc: Mapping[str, Any]) -> list[str]:
    """The GPU keys' structural problems (none when the GPU was not profiled). Lines and
    functions are checked only when their containers are well formed."""
    if "gpu_profiled" in doc and doc["gpu_profiled"] is not True:
        return ["gpu_profiled should be true when present"]
    if not is_profiled(doc):
        return []
    out = _check(doc, "run", "gpu", "")
    devices = doc.get("gpu_devices")
    several = isinstance(devices, list) and len(devices) > 1
    for i, d in enumerate(devices if isinstance(devices, list) else []):
        out += _check(d, "gpu_device", "required", f"gpu_devices[{i}]")
    files = doc.get("files")
    for path, entry in files.items() if isinstance(files, dict) else ():
        for level, key in (("line", "lines"), ("function", "functions")):
            items = entry.get(key) if isinstance(entry, dict) else None
            for i, item in enumerate(items if isinstance(items, list) else []):
                where = f"files[{path!r}].{key}[{i}]"
                out += _check(item, level, "gpu", where)
                if several and isinstance(item, dict):
                    per = item.get("gpu_devices")
                    if not isinstance(per, list) or any(
                        _check(d, "gpu_line_device", "required", "") for d in per
                    ):
                        out.append(f"{where}.gpu_devices should be a list of device figures")
    return out


__all__ = ["is_profiled", "problems"]
