"""Read helpers over a profile dict, shared by the reporters: totals, percentages, the
lines and functions worth showing, which function a line belongs to.

Nothing here mutates its arguments or does I/O. Percentages are of the run's total CPU time
(``cpu_python_s + cpu_native_s + cpu_system_s`` at the top level), as floats in 0..100.

In a memory profile (``memory_profiled``) a line matters for its memory too: a line that
allocated or copied without a CPU sample is as much a line as one that used CPU, and is
never left out for having no CPU.
"""

from __future__ import annotations

from spyglass.profile_model import memory_figures as memory

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any

    Profile = dict[str, Any]
    Times = Mapping[str, Any]


#: Figures backed by fewer CPU samples than this are rough (error ~ 1/sqrt(samples)).
MIN_SAMPLES = 10
#: Lines and functions below this share of CPU (and of wait) are not worth a row.
MIN_PERCENT = 1.0


class FileShare:
    __slots__ = ("cpu_s", "path", "percent", "samples", "wait_s")

    def __init__(
        self, path: str, cpu_s: float, percent: float, wait_s: float, samples: int
    ) -> None:
        self.path = path
        self.cpu_s = cpu_s
        self.percent = percent  # of the run's total CPU
        self.wait_s = wait_s
        self.samples = samples


class LineRef:
    __slots__ = ("cpu_s", "line", "lineno", "path", "percent", "wait_s")

    def __init__(
        self,
        path: str,
        lineno: int,
        cpu_s: float,
        percent: float,
        wait_s: float,
        line: Mapping[str, Any],
    ) -> None:
        self.path = path
        self.lineno = lineno
        self.cpu_s = cpu_s
        self.percent = percent  # of the run's total CPU
        self.wait_s = wait_s
        self.line = line  # the line object itself


class Summary:
    __slots__ = (
        "command",
        "cpu_s",
        "elapsed_s",
        "exit_status",
        "gc_s",
        "interval_s",
        "native_pct",
        "native_s",
        "python_pct",
        "python_s",
        "samples",
        "system_pct",
        "system_s",
        "threads",
        "unattributed_pct",
        "wait_s",
    )

    def __init__(
        self,
        command: str,
        elapsed_s: float,
        interval_s: float,
        cpu_s: float,
        python_s: float,
        native_s: float,
        system_s: float,
        python_pct: float,
        native_pct: float,
        system_pct: float,
        wait_s: float,
        samples: int,
        threads: int,
        exit_status: int | None,
        unattributed_pct: float,
        gc_s: float = 0.0,
    ) -> None:
        self.command = command
        self.elapsed_s = elapsed_s
        self.interval_s = interval_s
        self.cpu_s = cpu_s
        self.python_s = python_s
        self.native_s = native_s
        self.system_s = system_s
        self.python_pct = (
            python_pct  # the three percentages are of cpu_s and add up to 100 (or are all 0)
        )
        self.native_pct = native_pct
        self.system_pct = system_pct
        self.wait_s = wait_s
        self.samples = samples
        self.threads = threads
        self.exit_status = exit_status
        self.unattributed_pct = unattributed_pct  # CPU with no profiled frame on the stack
        self.gc_s = gc_s  # of python_s, the garbage collector's (0 in older profiles)


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
    return " ".join([str(profile["program"]), *(shell_quote(a) for a in args)])


_SHELL_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


def shell_quote(arg: str) -> str:
    """shlex.quote(arg), without shlex, which imports re."""
    if arg and all(c in _SHELL_SAFE for c in arg):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


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
        gc_s=float(profile.get("cpu_gc_s", 0.0)),
    )


def await_s(entry: Times) -> float:
    """asyncio tasks' time suspended at awaits (0 in profiles older than the figure)."""
    return float(entry.get("await_s", 0.0))


def is_busy(entry: Times, with_memory: bool = False) -> bool:
    """Whether a line or function has anything to show: CPU, wait or await, or
    (``with_memory``, for memory profiles) allocations or copies."""
    if cpu_s(entry) > 0 or float(entry["wait_s"]) > 0 or await_s(entry) > 0:
        return True
    return with_memory and memory.has_memory(entry)


def file_share(profile: Profile) -> list[FileShare]:
    """Profiled files with any CPU or wait time (or memory, in a memory profile), by share of
    CPU (then wait, then memory) descending."""
    total = total_cpu(profile)
    mem = memory.is_profiled(profile)
    files: dict[str, Any] = profile["files"]
    shares = [
        FileShare(path, cpu_s(f), percent(cpu_s(f), total), float(f["wait_s"]), int(f["samples"]))
        for path, f in files.items()
        if cpu_s(f) > 0
        or float(f["wait_s"]) > 0
        or int(f["samples"]) > 0
        or await_s(f) > 0
        or (mem and memory.has_memory(f))
    ]
    shares.sort(key=lambda s: (-s.cpu_s, -s.wait_s, -memory.alloc_mb(files[s.path]), s.path))
    return shares


def _line_key(ref: LineRef) -> tuple[float, float, str, int]:
    return (-ref.cpu_s, -ref.wait_s, ref.path, ref.lineno)


def top_lines(profile: Profile, n: int, *, by: str = "cpu") -> list[LineRef]:
    """The ``n`` lines of the run with the most CPU (``by="cpu"``), wait (``by="wait"``) or
    memory allocated (``by="memory"``; none in a profile without memory figures).

    Lines with none of it are never returned; ties go to the file path and line.
    """
    if by not in ("cpu", "wait", "memory"):
        raise ValueError(f"by must be 'cpu', 'wait' or 'memory', not {by!r}")
    total = total_cpu(profile)
    with_memory = by == "memory" and memory.is_profiled(profile)
    refs = [
        LineRef(
            path, int(ln["lineno"]), cpu_s(ln), percent(cpu_s(ln), total), float(ln["wait_s"]), ln
        )
        for path, f in profile["files"].items()
        for ln in f["lines"]
        if is_busy(ln, with_memory)
    ]
    if by == "memory":
        refs = [r for r in refs if memory.alloc_mb(r.line) > 0] if with_memory else []
        refs.sort(key=lambda r: (-memory.alloc_mb(r.line), *_line_key(r)))
    elif by == "wait":
        refs = [r for r in refs if r.wait_s > 0]
        refs.sort(key=lambda r: (-r.wait_s, -r.cpu_s, r.path, r.lineno))
    else:
        refs = [r for r in refs if r.cpu_s > 0]
        refs.sort(key=_line_key)
    return refs[: max(n, 0)]


def lines_that_matter(profile: Profile, n: int) -> list[LineRef]:
    """The run's top ``n`` lines by CPU and, in a memory profile, its top ``n`` by memory
    allocated and its possible leaks: the lines a report always shows."""
    refs = top_lines(profile, n)
    seen = {(r.path, r.lineno) for r in refs}
    for ref in top_lines(profile, n, by="memory"):
        if (ref.path, ref.lineno) not in seen:
            refs.append(ref)
            seen.add((ref.path, ref.lineno))
    total = total_cpu(profile)
    for leak in memory.leaks(profile):
        if leak.line is not None and (leak.path, leak.lineno) not in seen:
            c = cpu_s(leak.line)
            wait = float(leak.line["wait_s"])
            refs.append(LineRef(leak.path, leak.lineno, c, percent(c, total), wait, leak.line))
            seen.add((leak.path, leak.lineno))
    return refs


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
    keep = {lineno for p, lineno in always if p == path}
    mem = memory.is_profiled(profile)
    busy = [ln for ln in lines if is_busy(ln, mem)]
    if busy:
        hottest = min(busy, key=lambda ln: (-cpu_s(ln), -float(ln["wait_s"]), ln["lineno"]))
        keep.add(int(hottest["lineno"]))
    if mem:
        keep.update(int(leak["lineno"]) for leak in entry["leaks"])
    worth = worth_a_row(profile, min_percent)
    chosen = [ln for ln in busy if ln["lineno"] in keep or worth(ln)]
    return sorted(chosen, key=lambda ln: int(ln["lineno"]))


def worth_a_row(profile: Profile, min_percent: float) -> Callable[[Times], bool]:
    """Whether a line or function has at least ``min_percent`` of the run's CPU, or of its
    wait, or (memory profiles) of its allocation or of its copies."""
    cpu_cut = total_cpu(profile) * min_percent / 100.0
    wait_cut = float(profile["wait_s"]) * min_percent / 100.0
    await_cut = await_s(profile) * min_percent / 100.0
    mem = memory.is_profiled(profile)
    alloc_cut = memory.alloc_mb(profile) * min_percent / 100.0
    copy_cut = memory.copy_mb(profile) * min_percent / 100.0

    def worth(entry: Times) -> bool:
        cpu, wait = cpu_s(entry), float(entry["wait_s"])
        if (cpu > 0 and cpu >= cpu_cut) or (wait > 0 and wait >= wait_cut):
            return True
        awaited = await_s(entry)
        if awaited > 0 and awaited >= await_cut:
            return True
        if not mem:
            return False
        alloc, copied = memory.alloc_mb(entry), memory.copy_mb(entry)
        return (alloc > 0 and alloc >= alloc_cut) or (copied > 0 and copied >= copy_cut)

    return worth


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
    mem = memory.is_profiled(profile)
    rest = [
        ln
        for ln in profile["files"][path]["lines"]
        if int(ln["lineno"]) not in shown_nos and is_busy(ln, mem)
    ]
    return len(rest), sum(cpu_s(ln) for ln in rest)


def top_functions(profile: Profile, path: str, n: int | None = None) -> list[Mapping[str, Any]]:
    """Functions of ``path`` with CPU or wait (or memory, in a memory profile), by CPU (then
    wait, then memory) descending; at most ``n``."""
    mem = memory.is_profiled(profile)
    funcs = [fn for fn in profile["files"][path]["functions"] if is_busy(fn, mem)]
    funcs.sort(
        key=lambda f: (-cpu_s(f), -float(f["wait_s"]), -memory.alloc_mb(f), f["first_lineno"])
    )
    return funcs if n is None else funcs[: max(n, 0)]


def dedent_sources(sources: Sequence[str], tab_size: int = 4) -> list[str]:
    """Source lines with tabs expanded and the indentation they all share removed."""
    expanded = [s.expandtabs(tab_size).rstrip() for s in sources]
    indents = [len(s) - len(s.lstrip(" ")) for s in expanded if s.strip()]
    cut = min(indents, default=0)
    return [s[cut:] for s in expanded]


def uncertainty_s(time_s: float, samples: int) -> float:
    """The statistical uncertainty (one standard deviation) of a time measured with
    ``samples`` samples: ``time_s / sqrt(samples)``; 0 when there are no samples."""
    return float(time_s) / samples**0.5 if samples > 0 else 0.0


def _stack_names(profile: Profile, path: str) -> dict[int, dict[str, float]]:
    """For each line of ``path``: the functions the stacks attribute to it (their innermost
    frame in a profiled file), weighted by the stacks' time; lines of the frame table that
    no stack attributes get the weight 0."""
    files, frames = profile["files"], profile["frames"]
    names: dict[int, dict[str, float]] = {}
    for frame in frames:
        if frame["file"] == path:
            names.setdefault(int(frame["lineno"]), {}).setdefault(str(frame["function"]), 0.0)
    for stack in profile["stacks"]:
        inner = [frames[i] for i in stack["frames"] if 0 <= i < len(frames)]
        frame = next((f for f in reversed(inner) if f["file"] in files), None)
        if frame is not None and frame["file"] == path:
            by_name = names[int(frame["lineno"])]
            by_name[str(frame["function"])] += cpu_s(stack) + float(stack["wait_s"])
    return names


def line_functions(profile: Profile, path: str) -> dict[int, int]:
    """Which function of ``files[path]`` each of its lines belongs to: line number -> index
    into the file's ``functions`` list (lines of a file without functions are left out).

    The profile does not record it; the stacks tell for lines they were attributed to (the
    function with the most time there), the frame table for lines seen on a stack. Among
    several candidates, or among all the file's functions when neither knows the line, the
    innermost one wins: the greatest ``first_lineno`` at or before the line.
    """
    entry = profile["files"][path]
    funcs: list[Mapping[str, Any]] = entry["functions"]
    if not funcs:
        return {}
    names_at = _stack_names(profile, path)
    owners: dict[int, int] = {}
    for line in entry["lines"]:
        lineno = int(line["lineno"])
        named = names_at.get(lineno, {})
        candidates = [i for i, fn in enumerate(funcs) if fn["name"] in named]
        if candidates:
            most = max(named.get(str(funcs[i]["name"]), 0.0) for i in candidates)
            candidates = [i for i in candidates if named[str(funcs[i]["name"])] == most]
        candidates = candidates or list(range(len(funcs)))
        before = [i for i in candidates if int(funcs[i]["first_lineno"]) <= lineno]
        pick = max if before else min
        owners[lineno] = pick(before or candidates, key=lambda i: int(funcs[i]["first_lineno"]))
    return owners


__all__ = [
    "MIN_PERCENT",
    "MIN_SAMPLES",
    "FileShare",
    "LineRef",
    "Summary",
    "await_s",
    "breakdown",
    "command_line",
    "cpu_s",
    "dedent_sources",
    "file_share",
    "hidden_lines",
    "is_busy",
    "is_rough",
    "line_functions",
    "lines_that_matter",
    "percent",
    "select_lines",
    "summary",
    "top_functions",
    "top_lines",
    "total_cpu",
    "uncertainty_s",
    "with_gaps",
    "worth_a_row",
]
