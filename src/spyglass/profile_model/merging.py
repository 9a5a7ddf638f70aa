"""Adding spyglass profiles up: several runs, processes or hosts as one profile.

Everything that is a time or a count is summed: the totals, ``unattributed``, every file,
line (by line number) and function (by name and first line), and every stack, whose frames
are resolved through each input's frame table into one merged table. Threads are kept
apart: a thread is keyed by its input's label and its tid (two runs may well reuse tids),
and its name is prefixed with the label ("run2: MainThread").

What cannot be summed (see docs/formats.md):

- ``elapsed_s`` is the wall time during which at least one input was being profiled: the
  length of the union of the intervals ``[started_at, started_at + elapsed_s]``. That is the
  longest input's time for runs that overlap entirely (processes of one job) and the sum
  for runs one after the other; clocks of different hosts are trusted as they are.
  ``elapsed_s_total`` (an extra top-level key) is the plain sum of the inputs' wall times.
- ``started_at`` is the earliest start; ``interval_s`` the finest sampling interval.
- ``program``, ``argv``, ``exit_status`` and the versions are the inputs' when they all
  agree; otherwise programs and versions are listed (``" + "`` and ``", "``), ``argv`` is
  empty and ``exit_status`` the first non-zero one. ``options`` are united.
- ``sources`` (an extra top-level key) lists every input: its label and file, program,
  argv, started_at, elapsed_s, exit_status, versions, interval and samples, and the host
  (and cluster worker) it ran on. Merging merged profiles flattens their sources (labels
  become ``outer/inner``), and their ``task_types`` rows (their process labelled the same way).
- A library's file installed under different prefixes on different hosts is one file,
  named as the first input names it (profile_model.module_paths).

A line's ``source`` text is the first non-empty one seen: merge profiles of one version of
the code, or lines that moved will be added to the wrong neighbours.

Memory figures (docs/profile-format.md, "Merging"): allocations, frees, copies and sample
counts add up; Python's share of the allocation and a line's average allocation are
allocation-weighted means; peaks are the largest peak (``max_footprint_mb`` with the line
that set it); copy rates are the summed copies over the result's ``elapsed_s``. Timelines
are moved into the clock of the earliest input and summed as step functions (an input
counts until it ends), then reduced again to their cap. Possible leaks are united by
(file, line): the highest likelihood, the summed rate. The result is memory profiled when
any input is; an input without memory figures adds none. Sampling windows are the finest
(smallest) ones, like ``interval_s``.
"""

from __future__ import annotations

import os

from spyglass.profile_model import fields, gpu_merge, module_paths
from spyglass.profile_model import memory_figures as memory
from spyglass.profile_model.fields import PART_KEYS, TIME_KEYS
from spyglass.profile_model.native_functions import NativeMerge
from spyglass.schema import PROFILE_FORMAT, SCHEMA_VERSION

TYPE_CHECKING = False  # typing (and the reader) cost the end of every run with children
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from spyglass.profile_model.io import Profile

    Times = dict[str, Any]

# The top-level figures that add up (merge rule "sum" in the field table) beyond the times:
# those of every profile, and those of memory profiles but the ones that add up like a
# line's (_MemoryTotals.line). Sampling windows are the finest, like interval_s.
_RUN_SUMS = tuple(
    key
    for key in fields.names("run", presence=["written", "optional"], merge=["sum"])
    if key not in PART_KEYS
)
_MEMORY_SUMS = tuple(
    key
    for key in fields.names("run", presence=["memory", "written-mem"], merge=["sum"])
    if key not in memory.LINE_KEYS
)
_WINDOWS = fields.names("run", presence=["memory"], merge=["min"])
# The memory figures of lines and functions that add up, but those memory.add_line adds
# (it re-weighs Python's share with the allocation); those of newer versions may be absent.
_LINE_SUMS = tuple(
    key
    for key in fields.names("line", presence=["memory", "written-mem", "optional"], merge=["sum"])
    if key not in ("mem_alloc_mb", "copy_mb", "mem_samples")
)


def _total(values: Sequence[Any]) -> Any:
    """The sum of numbers, an integer when they all are (counts stay counts)."""
    total = sum(values)
    return round(total, 9) if isinstance(total, float) else total


def _zero() -> Times:
    return {**{key: 0.0 for key in (*TIME_KEYS, *PART_KEYS)}, "samples": 0}


def _add(target: Times, times: Mapping[str, Any]) -> None:
    for key in TIME_KEYS:
        target[key] += float(times[key])
    for key in PART_KEYS:
        target[key] = target.get(key, 0.0) + float(times.get(key, 0.0))
    target["samples"] += int(times["samples"])


def _rounded(times: Mapping[str, Any]) -> Times:
    """The figures of ``times`` with the float noise of summing rounded away."""
    out = {key: round(float(times[key]), 12) for key in TIME_KEYS}
    out.update({key: round(float(times.get(key, 0.0)), 12) for key in PART_KEYS})
    return {**out, "samples": times["samples"]}


def default_labels(names: Sequence[str]) -> list[str]:
    """Short distinct labels for inputs named ``names`` (file paths): the file's stem, with
    its directory when stems repeat ("host1/profile"), then "#2", "#3"… for duplicates."""
    stems = [os.path.splitext(os.path.basename(n))[0] or n for n in names]
    if len(set(stems)) < len(stems):
        parents = [os.path.basename(os.path.dirname(os.path.abspath(n))) for n in names]
        stems = [f"{p}/{s}" if p else s for p, s in zip(parents, stems)]
    return distinct_labels(stems)


def distinct_labels(names: Sequence[str]) -> list[str]:
    """The names, a repeated one numbered "#2", "#3"… so that every label is its own."""
    labels: list[str] = []
    for name in names:
        label, n = name, 1
        while label in labels:
            n += 1
            label = f"{name}#{n}"
        labels.append(label)
    return labels


def _interval_union(spans: list[tuple[float, float]]) -> float:
    """Length of the union of the intervals ``(start, duration)``."""
    total, end = 0.0, float("-inf")
    for start, duration in sorted(spans):
        stop = start + duration
        if start >= end:
            total += duration  # no overlap: exactly its own duration
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def _agreed(values: Sequence[Any], joiner: str) -> Any:
    unique = list(dict.fromkeys(values))
    return unique[0] if len(unique) == 1 else joiner.join(str(v) for v in unique)


def _exit_status(statuses: Sequence[int | None]) -> int | None:
    failed = [s for s in statuses if s not in (None, 0)]
    if failed:
        return failed[0]
    return 0 if 0 in statuses else None


def _union(lists: Sequence[Sequence[Any]]) -> list[Any]:
    seen: dict[Any, Any] = {}
    for items in lists:
        for item in items:
            seen.setdefault(tuple(item) if isinstance(item, list) else item, item)
    return list(seen.values())


def _options(profiles: Sequence[Profile]) -> dict[str, Any]:
    all_options = [p["options"] for p in profiles]
    merged: dict[str, Any] = {}
    for key in ("program_path", "profile_only", "profile_exclude", "functions"):
        merged[key] = _union([o[key] for o in all_options])
    merged["profile_all"] = any(o["profile_all"] for o in all_options)
    for key, value in all_options[0].items():  # other options: kept where all inputs agree
        if key not in merged and all(o.get(key) == value for o in all_options):
            merged[key] = value
    return merged


def _source(profile: Profile, label: str, name: str | None) -> list[dict[str, Any]]:
    nested = profile.get("sources")
    if isinstance(nested, list) and nested and all(isinstance(s, dict) for s in nested):
        return [{**s, "label": f"{label}/{s.get('label', '?')}"} for s in nested]
    entry: dict[str, Any] = {"label": label, "file": name}
    for key in ("program", "argv", "started_at", "elapsed_s", "exit_status"):
        entry[key] = profile[key]
    for key in ("host", "worker"):  # where it ran, for profiles of several hosts
        if profile.get(key):
            entry[key] = profile[key]
    for key in ("spyglass_version", "python_version", "platform", "interval_s", "samples"):
        entry[key] = profile[key]
    return [entry]


class _Merger:
    def __init__(self, *, with_memory: bool, start: float) -> None:
        self.memory = with_memory
        self.start = start  # the result's started_at: the clock of its timelines
        self.totals = _zero()
        self.unattributed = _zero()
        self.threads: dict[tuple[str, int, int], Times] = {}
        self.files: dict[str, dict[str, Any]] = {}
        self.frame_index: dict[tuple[str, str, int], int] = {}
        self.frames: list[dict[str, Any]] = []
        self.stacks: dict[tuple[int, ...], Times] = {}
        self.mem = _MemoryTotals()
        self.native = NativeMerge()
        self.gpu = gpu_merge.GpuRun()

    def add(self, profile: Profile, label: str) -> None:
        has_memory = memory.is_profiled(profile)
        series = memory.Series(
            [], float(profile["started_at"]) - self.start, float(profile["elapsed_s"])
        )
        if has_memory:
            self.mem.add(profile, series)
        _add(self.totals, profile)
        _add(self.unattributed, profile["unattributed"])
        self.native.add_run(profile)
        self.gpu.add(profile, float(profile["started_at"]) - self.start)
        occurrences: dict[int, int] = {}
        for thread in profile["threads"]:
            tid = int(thread["tid"])
            occurrences[tid] = occurrences.get(tid, -1) + 1
            name = f"{label}: {thread['name']}" if thread["name"] else f"{label}: thread {tid}"
            entry = self.threads.setdefault(
                (label, tid, occurrences[tid]), {"tid": tid, "name": name, **_zero()}
            )
            _add(entry, thread)
            if has_memory:
                memory.add_split(entry, thread)
        for path, entry in profile["files"].items():
            self._add_file(path, entry, series if has_memory else None)
        local = [self._frame(frame) for frame in profile["frames"]]
        for stack in profile["stacks"]:
            key = tuple(local[i] for i in stack["frames"])
            into = self.stacks.setdefault(key, _zero())
            _add(into, stack)
            self.native.add_stack(key, stack)
            if has_memory:
                memory.add_split(into, stack)

    def _add_file(self, path: str, entry: Mapping[str, Any], series: memory.Series | None) -> None:
        merged = self.files.setdefault(
            path, {"totals": _zero(), "lines": {}, "functions": {}, "leaks": {}}
        )
        _add(merged["totals"], entry)
        for line in entry["lines"]:
            lineno = int(line["lineno"])
            into = merged["lines"].setdefault(lineno, {"source": "", **_zero()})
            into["source"] = into["source"] or str(line["source"])
            _add(into, line)
            self.native.add_line(path, lineno, line)
            gpu_merge.add_line(into, line)
            if series is not None:
                _add_line_memory(into, line, series)
        for fn in entry["functions"]:
            key = (str(fn["name"]), int(fn["first_lineno"]))
            into = merged["functions"].setdefault(key, _zero())
            _add(into, fn)
            gpu_merge.add_line(into, fn)
            if series is not None:
                _add_line_memory(into, fn, series)
        if series is not None:
            memory.add_split(merged["totals"], entry)
            for leak in entry["leaks"]:
                lineno = int(leak["lineno"])
                likelihood, rate = merged["leaks"].get(lineno, (0.0, 0.0))
                merged["leaks"][lineno] = (
                    max(likelihood, float(leak["likelihood"])),
                    rate + float(leak["rate_mb_s"]),
                )

    def _frame(self, frame: Mapping[str, Any]) -> int:
        key = (str(frame["file"]), str(frame["function"]), int(frame["lineno"]))
        if key not in self.frame_index:
            self.frame_index[key] = len(self.frames)
            self.frames.append({"file": key[0], "function": key[1], "lineno": key[2]})
        return self.frame_index[key]

    def _line_out(
        self, fields: dict[str, Any], acc: Mapping[str, Any], elapsed_s: float
    ) -> dict[str, Any]:
        out = {**fields, **_rounded(acc)}
        if self.memory:
            out.update(_line_memory(acc, self.mem.alloc(), elapsed_s))
        out.update(self.gpu.line_out(acc))
        return out

    def files_out(self, elapsed_s: float) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for path, merged in self.files.items():
            lines = [
                {
                    **self._line_out({"lineno": n, "source": line["source"]}, line, elapsed_s),
                    **self.native.line_out(path, n),
                }
                for n, line in sorted(merged["lines"].items())
            ]
            functions = [
                self._line_out({"name": name, "first_lineno": first}, fn, elapsed_s)
                for (name, first), fn in sorted(
                    merged["functions"].items(), key=lambda kv: kv[0][::-1]
                )
            ]
            entry = {**_rounded(merged["totals"]), "lines": lines, "functions": functions}
            if self.memory:
                entry.update(_split(merged["totals"]))
                leaks = [
                    {"lineno": n, "likelihood": round(p, 9), "rate_mb_s": round(r, 9)}
                    for n, (p, r) in merged["leaks"].items()
                ]
                entry["leaks"] = memory.sorted_leaks(leaks)
            out[path] = entry
        return out

    def stacks_out(self) -> list[dict[str, Any]]:
        stacks = [
            {
                "frames": list(key),
                **_rounded(times),
                **(_split(times) if self.memory else {}),
                **self.native.stack_out(key),
            }
            for key, times in self.stacks.items()
        ]
        stacks.sort(key=lambda s: -sum(s[k] for k in TIME_KEYS))
        return stacks

    def threads_out(self) -> list[dict[str, Any]]:
        return [
            {
                "tid": t["tid"],
                "name": t["name"],
                **_rounded(t),
                **(_split(t) if self.memory else {}),
            }
            for t in self.threads.values()
        ]


def _split(acc: Mapping[str, Any]) -> dict[str, float]:
    return {key: round(float(acc.get(key, 0.0)), 9) for key in memory.SPLIT_KEYS}


def _add_line_memory(into: dict[str, Any], line: Mapping[str, Any], series: memory.Series) -> None:
    """Gather a line's (or function's) memory figures; _line_memory makes them its own."""
    memory.add_line(into, line)
    into["avg_weight"] = into.get("avg_weight", 0.0) + memory.alloc_mb(line) * float(
        line["mem_avg_mb"]
    )
    into["peak"] = max(into.get("peak", 0.0), float(line["mem_peak_mb"]))
    for key in _LINE_SUMS:
        if key in line:
            into[key] = into.get(key, 0.0) + float(line[key])
    into.setdefault("series", []).append(series.moved(line["mem_timeline"]))


def _line_memory(acc: Mapping[str, Any], total_alloc: float, elapsed_s: float) -> dict[str, Any]:
    out = memory.zero_line()
    if "series" not in acc:  # only inputs without memory figures had this line
        return out
    alloc = memory.alloc_mb(acc)
    out.update(
        mem_alloc_mb=round(alloc, 9),
        mem_python_fraction=memory.python_fraction(acc),
        mem_avg_mb=round(float(acc["avg_weight"]) / alloc, 9) if alloc > 0 else 0.0,
        mem_peak_mb=round(float(acc["peak"]), 9),
        mem_timeline=memory.reduce(memory.sum_steps(acc["series"]), memory.LINE_POINTS_WRITTEN),
        mem_samples=int(acc["mem_samples"]),
        copy_mb=round(memory.copy_mb(acc), 9),
    )
    out.update({key: round(float(acc[key]), 9) for key in _LINE_SUMS if key in acc})
    memory.finish_line(out, total_alloc, elapsed_s)
    return out


class _MemoryTotals:
    """The top-level memory figures of the inputs that have them."""

    def __init__(self) -> None:
        self.sums: dict[str, list[Any]] = {key: [] for key in _MEMORY_SUMS}
        self.line = memory.zero_line()  # alloc, Python share, copies and samples add like a line's
        self.windows: dict[str, list[float]] = {key: [] for key in _WINDOWS}
        self.peak: tuple[float, str | None, int | None] | None = None
        self.series: list[memory.Series] = []

    def add(self, profile: Profile, series: memory.Series) -> None:
        memory.add_line(self.line, profile)
        for key, values in self.sums.items():
            if key in profile:  # figures of newer versions may be missing
                values.append(profile[key])
        for key, values in self.windows.items():
            values.append(float(profile[key]))
        peak = float(profile["max_footprint_mb"])
        if self.peak is None or peak > self.peak[0]:
            self.peak = (peak, profile["max_footprint_file"], profile["max_footprint_lineno"])
        self.series.append(series.moved(profile["footprint_timeline"]))

    def alloc(self) -> float:
        return memory.alloc_mb(self.line)

    def out(self, elapsed_s: float) -> dict[str, Any]:
        peak, file, lineno = self.peak or (0.0, None, None)
        copied = memory.copy_mb(self.line)
        return {
            **{key: min(values) for key, values in self.windows.items()},
            "mem_alloc_mb": round(self.alloc(), 9),
            "mem_python_fraction": memory.python_fraction(self.line),
            "mem_samples": int(self.line["mem_samples"]),
            "copy_mb": round(copied, 9),
            "copy_mb_s": round(copied / elapsed_s, 9) if elapsed_s > 0 else 0.0,
            "max_footprint_mb": round(peak, 9),
            "max_footprint_file": file,
            "max_footprint_lineno": lineno,
            "footprint_timeline": memory.reduce(
                memory.sum_steps(self.series), memory.FOOTPRINT_POINTS
            ),
            **{key: _total(values) for key, values in self.sums.items() if values},
        }


def _current_schema(profile: Profile) -> bool:
    return profile.get("format") == PROFILE_FORMAT and profile.get("schema_version") == (
        SCHEMA_VERSION
    )


def merge_profiles(
    profiles: Sequence[Profile],
    labels: Sequence[str] | None = None,
    *,
    names: Sequence[str] | None = None,
    written_here: bool = False,
) -> Profile:
    """One profile adding up ``profiles`` (see the module's documentation).

    ``labels`` tell the inputs apart in thread names and ``sources`` (default: "pid N" for
    inputs that record a pid, else "1", "2"…); ``names`` are the inputs' file names, for
    ``sources`` and error messages. Inputs of an older schema version are read as the
    current one (io.upgrade). Raises ProfileError (one line, naming the input) for
    an input that is not a valid spyglass profile this spyglass reads, ValueError for no
    input or mismatched lengths.

    ``written_here``: the inputs are what this spyglass's own processes just wrote (a
    run's fragments), of the current schema: only their format and version are checked,
    not every value (which cost a run about 3.5 ms per process it merged).
    """
    if not profiles:
        raise ValueError("nothing to merge")
    if names is not None and len(names) != len(profiles):
        raise ValueError("names and profiles differ in length")
    if labels is None and names is not None:
        labels = default_labels(names)
    elif labels is None:
        labels = distinct_labels(
            [f"pid {p['pid']}" if "pid" in p else str(i + 1) for i, p in enumerate(profiles)]
        )
    if len(labels) != len(profiles):
        raise ValueError("labels and profiles differ in length")
    if not all(written_here and _current_schema(profile) for profile in profiles):
        from spyglass.profile_model.io import validate

        profiles = [
            profile
            if written_here and _current_schema(profile)
            else validate(profile, names[i] if names is not None else f"profile {labels[i]!r}")
            for i, profile in enumerate(profiles)
        ]

    profiles = module_paths.unify(profiles)
    start = min(float(p["started_at"]) for p in profiles)
    with_memory = any(memory.is_profiled(p) for p in profiles)
    merger = _Merger(with_memory=with_memory, start=start)
    sources: list[dict[str, Any]] = []
    for i, (profile, label) in enumerate(zip(profiles, labels)):
        merger.add(profile, label)
        sources.extend(_source(profile, label, names[i] if names is not None else None))

    spans = [(float(p["started_at"]), float(p["elapsed_s"])) for p in profiles]
    elapsed = round(_interval_union(spans), 9)
    programs = list(dict.fromkeys(str(p["program"]) for p in profiles))
    argvs = [p["argv"] for p in profiles]
    result: Profile = {
        "format": PROFILE_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "spyglass_version": _agreed([p["spyglass_version"] for p in profiles], ", "),
        "python_version": _agreed([p["python_version"] for p in profiles], ", "),
        "platform": _agreed([p["platform"] for p in profiles], ", "),
        "program": " + ".join(programs),
        "argv": list(argvs[0]) if len(programs) == 1 and all(a == argvs[0] for a in argvs) else [],
        "exit_status": _exit_status([p["exit_status"] for p in profiles]),
        "started_at": start,
        "elapsed_s": elapsed,
        "elapsed_s_total": round(sum(float(p["elapsed_s"]) for p in profiles), 9),
        "interval_s": min(float(p["interval_s"]) for p in profiles),
        **_rounded(merger.totals),
        "memory_profiled": with_memory,
        **(merger.mem.out(elapsed) if with_memory else {}),
        **merger.gpu.run_out(memory.FOOTPRINT_POINTS),
        "unattributed": _rounded(merger.unattributed),
        "threads": merger.threads_out(),
        "files": merger.files_out(elapsed),
        "frames": merger.frames,
        "stacks": merger.stacks_out(),
        **merger.native.run_out(),
        "options": _options(profiles),
        "sources": sources,
    }
    for key in _RUN_SUMS:
        if any(key in p for p in profiles):
            result[key] = _total([p.get(key) or 0 for p in profiles])
    processes = [
        x for p in profiles if isinstance(p.get("processes"), list) for x in p["processes"]
    ]
    if processes and with_memory:  # inputs without memory figures allocated nothing
        processes = [{**dict.fromkeys(memory.PROCESS_KEYS, 0.0), **x} for x in processes]
    if processes:
        result["processes"] = processes
    tasks = [x for p in profiles if isinstance(p.get("tasks"), list) for x in p["tasks"]]
    if tasks:
        result["tasks"] = sorted(tasks, key=lambda t: -float(t.get("await_s", 0.0)))
    task_types = [
        {**row, "process": f"{label}/{row.get('process', '?')}"}
        for p, label in zip(profiles, labels)
        for row in p.get("task_types") or []
    ]
    if task_types:
        result["task_types"] = task_types
    hosts = list(dict.fromkeys(str(p["host"]) for p in profiles if p.get("host")))
    if hosts:
        result["host"] = ", ".join(hosts)
    return result


__all__ = ["default_labels", "distinct_labels", "merge_profiles"]
