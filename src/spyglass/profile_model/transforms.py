"""Transformations of a profile dict: a copy narrowed to some files, without its idle or
minor lines, or with its threads summed into one.

Each returns a new profile that still matches the schema and its arithmetic (the input is
not modified): the top-level totals never change (they are the process's), and whatever a
transformation takes out of the files is added to ``unattributed``. Memory taken out of
the files needs no bookkeeping: the top-level figures already count what no file accounts
for.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from spyglass.profile_model import memory_figures as memory
from spyglass.profile_model.io import TIME_KEYS, TIMES_KEYS
from spyglass.profile_model.queries import cpu_s, line_functions, top_lines, worth_a_row

TYPE_CHECKING = False
if TYPE_CHECKING:
    from spyglass.profile_model.queries import Profile, Times


def _matches(path: str, patterns: Iterable[str]) -> bool:
    return any(p in path for p in patterns)


def filter_files(profile: Profile, only: Sequence[str], exclude: Sequence[str]) -> Profile:
    """A copy of ``profile`` keeping the files whose path contains one of ``only`` (all
    files when ``only`` is empty) and none of ``exclude``. Substring match, case-sensitive.

    Totals, threads and stacks are left as they are, so percentages stay shares of the whole
    run. The input is not modified; the kept file objects are shared with it.
    """
    result = copy.copy(profile)
    result["files"] = {
        path: entry
        for path, entry in profile["files"].items()
        if (not only or _matches(path, only)) and not _matches(path, exclude)
    }
    return result


def _add(target: dict[str, Any], times: Times, sign: int = 1) -> bool:
    """Add (or with ``sign=-1`` subtract) the figures of ``times`` to ``target`` in place,
    rounding away float noise; return whether a figure had to be held at zero."""
    clamped = False
    for key in TIME_KEYS:
        value = round(float(target[key]) + sign * float(times[key]), 12)
        clamped = clamped or value < -1e-9
        target[key] = max(0.0, value)
    samples = int(target["samples"]) + sign * int(times["samples"])
    target["samples"] = max(0, samples)
    return clamped or samples < 0


def _is_idle(times: Times, with_memory: bool = False) -> bool:
    if cpu_s(times) > 1e-12 or float(times["wait_s"]) > 1e-12 or times["samples"]:
        return False
    return not (with_memory and (memory.has_memory(times) or times.get("mem_samples")))


def _drop_lines(profile: Profile, keep: Callable[[str, Mapping[str, Any]], bool]) -> Profile:
    """A copy of ``profile`` without the lines for which ``keep(path, line)`` is false: their
    figures leave their file and function (see line_functions) for ``unattributed``; files
    and functions left without lines or figures go. Stacks, threads and totals stay."""
    result = copy.copy(profile)
    unattributed = dict(profile["unattributed"])
    mem = memory.is_profiled(profile)
    files: dict[str, Any] = {}
    for path, entry in profile["files"].items():
        lines = entry["lines"]
        kept = [ln for ln in lines if keep(path, ln)]
        if len(kept) == len(lines):
            files[path] = entry
            continue
        if not kept:
            _add(unattributed, entry)
            continue
        owners = line_functions(profile, path)
        new_entry = dict(entry)
        funcs = [dict(fn) for fn in entry["functions"]]
        kept_ids = {id(ln) for ln in kept}
        clamped = False
        for ln in lines:
            if id(ln) in kept_ids:
                continue
            _add(new_entry, ln, -1)
            _add(unattributed, ln)
            owner = owners.get(int(ln["lineno"]))
            missed = _add(funcs[owner], ln, -1) if owner is not None else True
            if mem:
                memory.add_split(new_entry, ln, -1)
                if owner is not None:
                    missed = memory.add_line(funcs[owner], ln, -1) or missed
            clamped = clamped or missed
        if clamped:  # the guess of which line is whose was wrong: rebuild from the lines
            for fn in funcs:
                fn.update({key: 0.0 for key in TIMES_KEYS[:-1]}, samples=0)
                if mem:
                    fn.update(mem_alloc_mb=0.0, mem_python_fraction=0.0, copy_mb=0.0)
                    fn.update(mem_samples=0)
            for ln in kept:
                owner = owners.get(int(ln["lineno"]))
                if owner is not None:
                    _add(funcs[owner], ln)
                    if mem:
                        memory.add_line(funcs[owner], ln)
        if mem:
            for fn in funcs:
                memory.finish_line(fn, memory.alloc_mb(profile), float(profile["elapsed_s"]))
            kept_nos = {int(ln["lineno"]) for ln in kept}
            new_entry["leaks"] = [x for x in entry["leaks"] if int(x["lineno"]) in kept_nos]
        busy = {owners.get(int(ln["lineno"])) for ln in kept}
        new_entry["lines"] = kept
        new_entry["functions"] = [
            fn for i, fn in enumerate(funcs) if i in busy or not _is_idle(fn, mem)
        ]
        files[path] = new_entry
    result["files"] = files
    result["unattributed"] = unattributed
    return result


def restrict_files(profile: Profile, only: Sequence[str], exclude: Sequence[str]) -> Profile:
    """``--profile-only`` / ``--profile-exclude`` applied to a saved profile: a copy keeping
    the files whose path contains one of ``only`` (any file when empty) and none of
    ``exclude`` (substrings, case-sensitive, as for ``spyglass run``).

    The figures of the files taken out are added to ``unattributed``: unlike the options of
    a run, a saved profile cannot charge them to the calling lines of the kept files. Stacks
    that never enter a kept file are dropped (all stacks are kept when both lists are empty).
    """
    result = copy.copy(profile)
    if not only and not exclude:
        return result
    files: dict[str, Any] = profile["files"]
    kept = {p for p in files if (not only or _matches(p, only)) and not _matches(p, exclude)}
    unattributed = dict(profile["unattributed"])
    for path, entry in files.items():
        if path not in kept:
            _add(unattributed, entry)
    frames: list[Mapping[str, Any]] = profile["frames"]
    result["files"] = {path: entry for path, entry in files.items() if path in kept}
    result["unattributed"] = unattributed
    result["stacks"] = [
        stack
        for stack in profile["stacks"]
        if any(0 <= i < len(frames) and frames[i]["file"] in kept for i in stack["frames"])
    ]
    return result


def hide_idle_lines(profile: Profile, min_percent: float) -> Profile:
    """A copy of ``profile`` keeping only the lines with at least ``min_percent`` of the
    run's CPU, or of its wait (``--min-share``), or, in a memory profile, of its allocation
    or of its copies, and its possible leaks; the rest goes to ``unattributed``."""
    worth = worth_a_row(profile, min_percent)
    leaking = {(leak.path, leak.lineno) for leak in memory.leaks(profile)}

    def keep(path: str, line: Mapping[str, Any]) -> bool:
        return worth(line) or (path, int(line["lineno"])) in leaking

    return _drop_lines(profile, keep)


def keep_top_lines(profile: Profile, n: int) -> Profile:
    """A copy of ``profile`` keeping only its ``n`` costliest lines (``--top``): a line's
    cost is the larger of its share of the CPU and of the memory allocated, so both kinds
    of hot line compete for the same places; the rest goes to ``unattributed``."""
    every = sum(len(f["lines"]) for f in profile["files"].values())
    by_memory = top_lines(profile, every, by="memory")
    total_alloc = sum(memory.alloc_mb(r.line) for r in by_memory) or 1.0
    score = {(r.path, r.lineno): r.percent for r in top_lines(profile, every)}
    for r in by_memory:
        share = 100.0 * memory.alloc_mb(r.line) / total_alloc
        score[(r.path, r.lineno)] = max(score.get((r.path, r.lineno), 0.0), share)
    chosen = set(sorted(score, key=lambda k: (-score[k], k))[: max(n, 0)])
    return _drop_lines(profile, lambda path, line: (path, int(line["lineno"])) in chosen)


def collapse_threads(profile: Profile) -> Profile:
    """A copy of ``profile`` whose threads are summed into one (the first thread's id,
    named "all N threads")."""
    result = copy.copy(profile)
    threads: list[Mapping[str, Any]] = profile["threads"]
    if len(threads) > 1:
        merged: dict[str, Any] = {
            "tid": int(threads[0]["tid"]),
            "name": f"all {len(threads)} threads",
        }
        merged.update({key: 0.0 for key in TIMES_KEYS[:-1]}, samples=0)
        mem = memory.is_profiled(profile)
        if mem:
            merged.update(dict.fromkeys(memory.SPLIT_KEYS, 0.0))
        for thread in threads:
            _add(merged, thread)
            if mem:
                memory.add_split(merged, thread)
        result["threads"] = [merged]
    return result


__all__ = [
    "collapse_threads",
    "filter_files",
    "hide_idle_lines",
    "keep_top_lines",
    "restrict_files",
]
