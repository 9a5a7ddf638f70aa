"""Reading each profiler's output into the same shape, for the accuracy tests.

``parse(key, path, script)`` returns a ``Parsed``:
- ``self_time``: function name -> time the profiler attributes to that function itself
  (not its callees), for functions defined in the file named ``script``;
- ``total``: everything the profiler reports for the run, in the same unit;
- ``split``: function name -> (python, native) time, or None when the profiler cannot
  tell them apart (``split_note`` says why, or how the split was derived).
Units differ between profilers (seconds, percent, samples); only ratios are used.
"""

from __future__ import annotations

import json
import os
import pstats
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path


class NotApplicable(Exception):
    """The profiler's output cannot answer the question (the message says why)."""


@dataclass
class Parsed:
    self_time: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    total: float = 0.0
    split: dict[str, tuple[float, float]] | None = None
    split_note: str = ""


def _same_file(path: str, script: str) -> bool:
    return os.path.basename(path) == script


def _load_json(path: Path) -> dict:
    with path.open() as fh:
        return json.load(fh)


SPYGLASS_KEYS = ("format", "schema_version", "cpu_python_s", "cpu_native_s", "files", "threads")
# 2: memory and copy profiling; 3: zero figures of thread and stack rows left out, frames
# naming their files by index (nothing the harness reads).
SPYGLASS_SCHEMA_VERSIONS = (1, 2, 3)


def validate_spyglass(path: Path, memory: bool | None = None) -> str | None:
    """None if ``path`` is a spyglass profile the harness can read, else why not. With
    ``memory``, its ``memory_profiled`` (false in version 1) must be that too."""
    try:
        doc = _load_json(path)
    except (OSError, ValueError) as exc:
        return f"profile unreadable: {exc}"
    if (
        doc.get("format") != "spyglass-profile"
        or doc.get("schema_version") not in SPYGLASS_SCHEMA_VERSIONS
    ):
        return "not a spyglass profile (format/schema_version)"
    missing = [k for k in SPYGLASS_KEYS if k not in doc]
    if missing or not isinstance(doc["files"], dict):
        return f"spyglass profile lacks {missing or 'a files object'}"
    profiled = doc.get("memory_profiled", False) is True
    if memory is not None and profiled != memory:
        return f"memory_profiled is {str(profiled).lower()}, expected {str(memory).lower()}"
    return None


def _times(d: dict) -> tuple[float, float]:
    return d.get("cpu_python_s", 0.0), d.get("cpu_native_s", 0.0) + d.get("cpu_system_s", 0.0)


def parse_spyglass(path: Path, script: str) -> Parsed:
    reason = validate_spyglass(path)
    if reason:
        raise ValueError(reason)
    doc = _load_json(path)
    res = Parsed(split={}, split_note="cpu_python_s vs cpu_native_s + cpu_system_s")
    res.total = sum(_times(doc))
    for fname, fdata in doc["files"].items():
        if not _same_file(fname, script):
            continue
        for fn in fdata.get("functions", []):
            name = fn["name"].rsplit(".", 1)[-1]
            py, nat = _times(fn)
            res.self_time[name] += py + nat
            old = res.split.get(name, (0.0, 0.0))
            res.split[name] = (old[0] + py, old[1] + nat)
    return res


def parse_scalene(path: Path, script: str) -> Parsed:
    doc = _load_json(path)
    res = Parsed(split={}, split_note="n_cpu_percent_python vs n_cpu_percent_c + n_sys_percent")
    res.total = 100.0  # Scalene's figures are percentages of the program's CPU time
    for fname, fdata in doc.get("files", {}).items():
        if not _same_file(fname, script):
            continue
        for fn in fdata.get("functions", []):
            py = fn.get("n_cpu_percent_python", 0.0)
            nat = fn.get("n_cpu_percent_c", 0.0) + fn.get("n_sys_percent", 0.0)
            res.self_time[fn["line"]] += py + nat
            old = res.split.get(fn["line"], (0.0, 0.0))
            res.split[fn["line"]] = (old[0] + py, old[1] + nat)
    return res


def parse_pyspy(path: Path, script: str) -> Parsed:
    doc = _load_json(path)
    frames = doc["shared"]["frames"]
    res = Parsed(split_note="py-spy records Python stacks only: no Python/native split")
    for prof in doc.get("profiles", []):
        weights = prof.get("weights") or [1.0] * len(prof["samples"])
        for stack, w in zip(prof["samples"], weights):
            res.total += w
            if stack:
                leaf = frames[stack[-1]]
                if _same_file(leaf.get("file") or "", script):
                    res.self_time[leaf["name"]] += w
    return res


def parse_pyinstrument(path: Path, script: str) -> Parsed:
    doc = _load_json(path)
    res = Parsed(
        split={},
        split_note="derived: time in built-in (C) functions called directly vs the rest",
    )
    root = doc.get("root_frame")
    res.total = root["time"] if root else 0.0

    def visit(node: dict) -> None:
        children = node.get("children", [])
        real = [c for c in children if not c["function"].startswith("[")]
        own = node["time"] - sum(c["time"] for c in real)
        if _same_file(node.get("file_path") or "", script):
            name = node["function"]
            native = sum(c["time"] for c in real if c.get("file_path") == "<built-in>")
            res.self_time[name] += own
            old = res.split.get(name, (0.0, 0.0))
            res.split[name] = (old[0] + own, old[1] + native)
        for child in real:
            visit(child)

    if root:
        visit(root)
    return res


def parse_cprofile(path: Path, script: str) -> Parsed:
    stats = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    res = Parsed(
        split={},
        split_note="derived: tottime of built-in (C) functions called directly vs the rest",
    )
    ours = {}
    for key, (_cc, _nc, tt, _ct, _callers) in stats.items():
        res.total += tt
        if _same_file(key[0], script):
            res.self_time[key[2]] += tt
            ours[key] = key[2]
    for key, name in ours.items():
        res.split[name] = (stats[key][2], 0.0)
    for key, (_cc, _nc, _tt, _ct, callers) in stats.items():
        if key[0] != "~":
            continue
        for caller, caller_stats in callers.items():
            if caller in ours:
                py, nat = res.split[ours[caller]]
                res.split[ours[caller]] = (py, nat + caller_stats[2])
    return res


def parse(key: str, path: Path, script: str) -> Parsed:
    if key in ("spyglass-cpu", "spyglass-full"):
        return parse_spyglass(path, script)
    if key in ("scalene-cpu", "scalene-full"):
        return parse_scalene(path, script)
    if key == "py-spy":
        return parse_pyspy(path, script)
    if key == "pyinstrument":
        return parse_pyinstrument(path, script)
    if key == "cprofile":
        return parse_cprofile(path, script)
    if key in NO_CPU_REASON:
        raise NotApplicable(NO_CPU_REASON[key])
    raise KeyError(key)


NO_CPU_REASON = {"memray": "memray profiles memory only: its capture has no CPU time"}
