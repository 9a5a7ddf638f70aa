"""Pure functions over a profile dict, shared by the reporters.

Nothing here mutates its arguments or does I/O. Percentages are of the run's total CPU time
(``cpu_python_s + cpu_native_s + cpu_system_s`` at the top level), as floats in 0..100.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

Profile = dict[str, Any]
Times = Mapping[str, Any]

#: Figures backed by fewer CPU samples than this are rough (error ~ 1/sqrt(samples)).
MIN_SAMPLES = 10
#: Lines and functions below this share of CPU (and of wait) are not worth a row.
MIN_PERCENT = 1.0


class FileShare(NamedTuple):
    path: str
    cpu_s: float
    percent: float  # of the run's total CPU
    wait_s: float
    samples: int


class LineRef(NamedTuple):
    path: str
    lineno: int
    cpu_s: float
    percent: float  # of the run's total CPU
    wait_s: float
    line: Mapping[str, Any]  # the line object itself


class Summary(NamedTuple):
    command: str
    elapsed_s: float
    interval_s: float
    cpu_s: float
    python_s: float
    native_s: float
    system_s: float
    python_pct: float  # the three percentages are of cpu_s and add up to 100 (or are all 0)
    native_pct: float
    system_pct: float
    wait_s: float
    samples: int
    threads: int
    exit_status: int | None
    unattributed_pct: float  # CPU with no profiled frame on the stack


def cpu_s(times: Times) -> float:
    """CPU seconds of a times object (Python + native + system)."""
    return (
        float(times["cpu_python_s"]) + float(times["cpu_native_s"]) + float(times["cpu_system_s"])
    )


def total_cpu(profile: Profile) -> float:
    """The run's total CPU seconds: the denominator of every percentage."""
    return cpu_s(profile)


def percent(part: float, whole: float) -> float:
    """``part`` as a percentage of ``whole``; 0 when ``whole`` is 0."""
    return 100.0 * part / whole if whole > 0 else 0.0


def is_rough(times: Times, min_samples: int = MIN_SAMPLES) -> bool:
    """Whether the CPU figures of ``times`` rest on too few samples to be trusted closely."""
    return int(times["samples"]) < min_samples


def breakdown(times: Times, total: float) -> tuple[float, float, float]:
    """Python, native and system percentages of ``total`` for a times object."""
    return (
        percent(float(times["cpu_python_s"]), total),
        percent(float(times["cpu_native_s"]), total),
        percent(float(times["cpu_system_s"]), total),
    )


def command_line(profile: Profile) -> str:
    """What was profiled, as a shell-like command line (``program`` plus its arguments)."""
    args: list[str] = list(profile.get("argv") or [])[1:]
    return " ".join([str(profile["program"]), *(shlex.quote(a) for a in args)])


def summary(profile: Profile) -> Summary:
    """Headline figures of a run."""
    cpu = total_cpu(profile)
    py, nat, sys_ = breakdown(profile, cpu)
    return Summary(
        command=command_line(profile),
        elapsed_s=float(profile["elapsed_s"]),
        interval_s=float(profile["interval_s"]),
        cpu_s=cpu,
        python_s=float(profile["cpu_python_s"]),
        native_s=float(profile["cpu_native_s"]),
        system_s=float(profile["cpu_system_s"]),
        python_pct=py,
        native_pct=nat,
        system_pct=sys_,
        wait_s=float(profile["wait_s"]),
        samples=int(profile["samples"]),
        threads=len(profile["threads"]),
        exit_status=profile.get("exit_status"),
        unattributed_pct=percent(cpu_s(profile["unattributed"]), cpu),
    )


def file_share(profile: Profile) -> list[FileShare]:
    """Profiled files with any CPU or wait time, by share of CPU (then wait) descending."""
    total = total_cpu(profile)
    shares = [
        FileShare(path, cpu_s(f), percent(cpu_s(f), total), float(f["wait_s"]), int(f["samples"]))
        for path, f in profile["files"].items()
        if cpu_s(f) > 0 or float(f["wait_s"]) > 0 or int(f["samples"]) > 0
    ]
    shares.sort(key=lambda s: (-s.cpu_s, -s.wait_s, s.path))
    return shares


def _line_key(ref: LineRef) -> tuple[float, float, str, int]:
    return (-ref.cpu_s, -ref.wait_s, ref.path, ref.lineno)


def top_lines(profile: Profile, n: int, *, by: str = "cpu") -> list[LineRef]:
    """The ``n`` lines of the run with the most CPU (``by="cpu"``) or wait (``by="wait"``).

    Lines with neither CPU nor wait are never returned; ties go to the file path and line.
    """
    if by not in ("cpu", "wait"):
        raise ValueError(f"by must be 'cpu' or 'wait', not {by!r}")
    total = total_cpu(profile)
    refs = [
        LineRef(
            path, int(ln["lineno"]), cpu_s(ln), percent(cpu_s(ln), total), float(ln["wait_s"]), ln
        )
        for path, f in profile["files"].items()
        for ln in f["lines"]
        if cpu_s(ln) > 0 or float(ln["wait_s"]) > 0
    ]
    if by == "wait":
        refs = [r for r in refs if r.wait_s > 0]
        refs.sort(key=lambda r: (-r.wait_s, -r.cpu_s, r.path, r.lineno))
    else:
        refs = [r for r in refs if r.cpu_s > 0]
        refs.sort(key=_line_key)
    return refs[: max(n, 0)]


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


def select_lines(
    profile: Profile,
    path: str,
    *,
    min_percent: float = MIN_PERCENT,
    always: Iterable[tuple[str, int]] = (),
) -> list[Mapping[str, Any]]:
    """The lines of ``path`` worth showing, by line number.

    A line is shown when its CPU is at least ``min_percent`` of the run's CPU, or its wait at
    least ``min_percent`` of the run's wait, or ``(path, lineno)`` is in ``always`` (e.g. the
    run's top lines), or it is the file's hottest line, so no shown file has an empty table.
    """
    entry = profile["files"][path]
    lines: list[Mapping[str, Any]] = entry["lines"]
    cpu_cut = total_cpu(profile) * min_percent / 100.0
    wait_cut = float(profile["wait_s"]) * min_percent / 100.0
    keep = {lineno for p, lineno in always if p == path}
    busy = [ln for ln in lines if cpu_s(ln) > 0 or float(ln["wait_s"]) > 0]
    if busy:
        hottest = min(busy, key=lambda ln: (-cpu_s(ln), -float(ln["wait_s"]), ln["lineno"]))
        keep.add(int(hottest["lineno"]))
    chosen = [
        ln
        for ln in busy
        if ln["lineno"] in keep
        or (cpu_s(ln) > 0 and cpu_s(ln) >= cpu_cut)
        or (float(ln["wait_s"]) > 0 and float(ln["wait_s"]) >= wait_cut)
    ]
    return sorted(chosen, key=lambda ln: int(ln["lineno"]))


def with_gaps(lines: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any] | None]:
    """``lines`` (sorted by line number) with ``None`` wherever line numbers skip, which a
    reporter shows as a single elision row (⋮)."""
    result: list[Mapping[str, Any] | None] = []
    previous: int | None = None
    for ln in lines:
        if previous is not None and int(ln["lineno"]) > previous + 1:
            result.append(None)
        result.append(ln)
        previous = int(ln["lineno"])
    return result


def hidden_lines(
    profile: Profile, path: str, shown: Sequence[Mapping[str, Any]]
) -> tuple[int, float]:
    """How many sampled lines of ``path`` are not in ``shown``, and their CPU seconds."""
    shown_nos = {int(ln["lineno"]) for ln in shown}
    rest = [
        ln
        for ln in profile["files"][path]["lines"]
        if int(ln["lineno"]) not in shown_nos and (cpu_s(ln) > 0 or float(ln["wait_s"]) > 0)
    ]
    return len(rest), sum(cpu_s(ln) for ln in rest)


def top_functions(profile: Profile, path: str, n: int | None = None) -> list[Mapping[str, Any]]:
    """Functions of ``path`` with CPU or wait, by CPU (then wait) descending; at most ``n``."""
    funcs = [
        fn for fn in profile["files"][path]["functions"] if cpu_s(fn) > 0 or float(fn["wait_s"]) > 0
    ]
    funcs.sort(key=lambda fn: (-cpu_s(fn), -float(fn["wait_s"]), int(fn["first_lineno"])))
    return funcs if n is None else funcs[: max(n, 0)]


def dedent_sources(sources: Sequence[str], tab_size: int = 4) -> list[str]:
    """Source lines with tabs expanded and the indentation they all share removed."""
    expanded = [s.expandtabs(tab_size).rstrip() for s in sources]
    indents = [len(s) - len(s.lstrip(" ")) for s in expanded if s.strip()]
    cut = min(indents, default=0)
    return [s[cut:] for s in expanded]


__all__ = [
    "MIN_PERCENT",
    "MIN_SAMPLES",
    "FileShare",
    "LineRef",
    "Summary",
    "breakdown",
    "command_line",
    "cpu_s",
    "dedent_sources",
    "file_share",
    "filter_files",
    "hidden_lines",
    "is_rough",
    "percent",
    "select_lines",
    "summary",
    "top_functions",
    "top_lines",
    "total_cpu",
    "with_gaps",
]
