"""Merging what the processes of a run left (their fragments, the journals of those that
died first, notes on those that could not be profiled) into the run's one profile."""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from typing import Any


def merge_run(
    fragments_dir: str, root_pid: int, exit_status: int | None, program: str
) -> dict[str, Any] | None:
    """The run's profile: the fragments every process of the run left (rebuilt from its
    journal for one that died first) merged into one, with a per-process breakdown, the
    program's first image as the root. None when the program itself left nothing. The
    fragment directory is removed."""
    fragments = []
    try:
        names = set(os.listdir(fragments_dir))
    except OSError:
        names = set()
    unprofiled = []
    for name in sorted(names):
        if name.startswith("unprofiled-"):
            note = _read_json(os.path.join(fragments_dir, name))
            if note is not None:
                unprofiled.append(note)
            continue
        if not name.startswith("process-"):
            continue
        path = os.path.join(fragments_dir, name)
        if name.endswith(".json"):
            fragment = _read_fragment(path)
        elif name.endswith(".journal") and name[: -len(".journal")] + ".json" not in names:
            fragment = _recover(path)  # a process that died before it could write one
        else:
            continue
        if fragment is not None:
            fragments.append(_with_sources(fragment))
    import shutil

    shutil.rmtree(fragments_dir, ignore_errors=True)
    # The program's own process, in the order its images ran (an exec keeps the pid).
    own = sorted(
        (f for f in fragments if f.get("pid") == root_pid),
        key=lambda f: float(f.get("started_at") or 0.0),
    )
    if not own:
        return None
    root = own[0]
    others = [f for f in fragments if f is not root]
    root["exit_status"] = exit_status
    merged = with_children(root, others, unprofiled)
    merged["program"] = program
    return merged


def _read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _read_fragment(path: str) -> dict[str, Any] | None:
    # A child killed while writing its profile still has its journal.
    return _read_json(path) or _recover(path[: -len(".json")] + ".journal")


def _recover(journal: str) -> dict[str, Any] | None:
    """The profile of a child that died before it wrote one, from its run journal."""
    import spyglass._native as _native

    try:
        fragment: dict[str, Any] = json.loads(_native.recover_journal(journal))
    except (OSError, RuntimeError, ValueError) as e:
        pid = os.path.basename(journal).split("-")[1]
        from spyglass.safe_text import escape_text

        reason = escape_text(str(e))
        print(f"spyglass: warning: process {pid} left no usable profile: {reason}", file=sys.stderr)
        return None
    fragment["recovered"] = True
    return fragment


def _with_sources(fragment: dict[str, Any]) -> dict[str, Any]:
    """A profile recovered from the journal of a child killed before it could finish has
    no source text: its lines get it here, from the files."""
    import linecache

    for path, stats in (fragment.get("files") or {}).items():
        for line in stats.get("lines") or []:
            if not line.get("source") and isinstance(line.get("lineno"), int):
                line["source"] = linecache.getline(path, line["lineno"]).rstrip("\r\n")
    return fragment


def process_entry(profile: dict[str, Any]) -> dict[str, Any]:
    """One process's line in the per-process breakdown."""
    keys = ("cpu_python_s", "cpu_native_s", "cpu_system_s", "wait_s", "samples")
    entry = {
        "pid": profile.get("pid"),
        "program": profile.get("program"),
        "argv": profile.get("argv"),
        "exit_status": profile.get("exit_status"),
        "elapsed_s": profile.get("elapsed_s"),
        **{k: profile.get(k, 0) for k in keys},
    }
    if profile.get("recovered"):
        entry["recovered"] = True  # died without writing a profile: rebuilt from its journal
    if profile.get("memory_profiled"):
        from spyglass.process_keys import PROCESS_KEYS

        entry.update({k: profile.get(k, 0.0) for k in PROCESS_KEYS})
    return entry


def unprofiled_entry(note: dict[str, Any], memory: bool) -> dict[str, Any]:
    """A Python process of the run that could not be profiled (another Python version
    without spyglass): listed with the reason, and no figures."""
    entry = process_entry({"memory_profiled": memory})
    for key in ("pid", "program", "argv", "python_version"):
        entry[key] = note.get(key)
    entry["not_profiled"] = str(note.get("not_profiled") or "unknown reason")
    return entry


def with_children(
    root: dict[str, Any],
    fragments: list[dict[str, Any]],
    unprofiled: list[dict[str, Any]],
) -> dict[str, Any]:
    memory = bool(root.get("memory_profiled"))
    processes = [process_entry(root)] + [process_entry(f) for f in fragments]
    processes += [unprofiled_entry(n, memory) for n in unprofiled]
    merged = root
    if fragments:  # the merging machinery costs start-up: a run of one process skips it
        from spyglass.merging import merge_profiles

        merged = merge_profiles([root, *fragments])
    for key in ("program", "argv", "exit_status", "elapsed_s", "started_at", "pid"):
        merged[key] = root.get(key)  # the run is the root's: children add their work only
    merged["processes"] = processes
    return merged
