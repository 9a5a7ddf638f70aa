"""The memory and copy figures of a profile (schema versions 2 and 3, docs/profile-format.md).

Pure functions shared by the reader, the processors, merging and the reporters. Memory
keys are only present when the profile says ``memory_profiled``; every function here that
reads one treats a missing key as zero, so profiles of both kinds go through the same code.
Volumes are MB (2^20 bytes); timelines are lists of ``[t_s, mb]`` points, ``t_s`` seconds
since the profile's ``started_at``, read as step functions (a point holds until the next).
"""

from __future__ import annotations

from spyglass.profile_model import fields
from spyglass.profile_model.kinds import FOOTPRINT_POINTS, LINE_POINTS, LINE_POINTS_WRITTEN
from spyglass.profile_model.process_keys import PROCESS_KEYS  # what processes[] carry

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    Profile = dict[str, Any]
    Entry = Mapping[str, Any]
    Timeline = list[list[float]]


#: The keys of a memory profile, level by level (from the field table, fields.FIELDS): the
#: top level's; what threads, stacks, files and processes carry (files also ``leaks``);
#: what lines and functions carry.
TOP_KEYS = fields.names("run", presence=["memory"])
SPLIT_KEYS = fields.names("stack", presence=["memory"])
LINE_KEYS = fields.names("line", presence=["memory"])
#: What lines and functions of newer profiles also carry (absent: unknown). Of the line's
#: own sampled blocks: MB freed (wherever), MB still live at the end, and MB live when the
#: process's footprint was at its maximum. They add up across processes.
LIVE_KEYS = fields.names("line", presence=["written-mem"])

_DIGITS = 9  # MB to the byte and beyond: rounds away the noise of adding floats up


def is_profiled(profile: Entry) -> bool:
    """Whether ``profile`` has memory figures (``memory_profiled`` is true)."""
    return profile.get("memory_profiled") is True


def _num(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def alloc_mb(entry: Entry) -> float:
    """MB allocated (sampled) by a line, function, file, thread, stack or the run."""
    return _num(entry.get("mem_alloc_mb"))


def copy_mb(entry: Entry) -> float:
    """MB copied by an entry (0 without memory figures)."""
    return _num(entry.get("copy_mb"))


def python_fraction(entry: Entry) -> float:
    return min(1.0, max(0.0, _num(entry.get("mem_python_fraction"))))


def python_mb(entry: Entry) -> float:
    """The part of ``alloc_mb`` made through Python's allocator."""
    return alloc_mb(entry) * python_fraction(entry)


def has_memory(entry: Entry) -> bool:
    """Whether an entry allocated or copied anything."""
    return alloc_mb(entry) > 0 or copy_mb(entry) > 0


def share(part: float, whole: float) -> float:
    return min(1.0, part / whole) if whole > 0 else 0.0


# --------------------------------------------------------------------------- arithmetic


def zero_line() -> dict[str, Any]:
    """The memory figures of a line or function that allocated and copied nothing."""
    return {key: _zero(fields.field("line", key).kind) for key in LINE_KEYS}


def _zero(kind: str) -> Any:
    return [] if kind.endswith("timeline") else 0 if kind == "count" else 0.0


def add_split(target: dict[str, Any], entry: Entry, sign: int = 1) -> bool:
    """Add (``sign=-1``: take out) ``mem_alloc_mb`` and ``copy_mb`` of ``entry`` to
    ``target`` in place; return whether a figure had to be held at zero."""
    clamped = False
    for key in SPLIT_KEYS:
        value = round(_num(target.get(key)) + sign * _num(entry.get(key)), _DIGITS)
        clamped = clamped or value < -1e-6
        target[key] = max(0.0, value)
    return clamped


def add_line(target: dict[str, Any], entry: Entry, sign: int = 1) -> bool:
    """Add (``sign=-1``: take out) the figures of a line that add up into a function or a
    line: allocation (with its Python share re-weighted), copies and samples. Peaks, averages
    and timelines do not add up this way and are left alone (merging combines those)."""
    python = python_mb(target) + sign * python_mb(entry)
    clamped = add_split(target, entry, sign)
    samples = int(_num(target.get("mem_samples"))) + sign * int(_num(entry.get("mem_samples")))
    target["mem_samples"] = max(0, samples)
    alloc = float(target["mem_alloc_mb"])
    target["mem_python_fraction"] = round(share(max(0.0, python), alloc), _DIGITS)
    return clamped or samples < 0


def finish_line(target: dict[str, Any], total_alloc_mb: float, elapsed_s: float) -> None:
    """Set the figures of a line or function that derive from others: its share of the run's
    allocation and its copy rate."""
    target["mem_share"] = round(share(alloc_mb(target), total_alloc_mb), _DIGITS)
    rate = copy_mb(target) / elapsed_s if elapsed_s > 0 else 0.0
    target["copy_mb_s"] = round(rate, _DIGITS)


# --------------------------------------------------------------------------- timelines


class Series:
    """One input of a timeline sum: its points, the seconds to add to their times (to put
    them in the result's clock), and when its process ended in its own clock (None: never
    known to have ended)."""

    __slots__ = ("end_s", "points", "shift_s")

    def __init__(
        self, points: Sequence[Sequence[float]], shift_s: float = 0.0, end_s: float | None = None
    ) -> None:
        self.points = points
        self.shift_s = shift_s
        self.end_s = end_s

    def moved(self, points: Sequence[Sequence[float]]) -> Series:
        """Other points in the same clock, of the same process."""
        return Series(points, self.shift_s, self.end_s)


def _time(point: Sequence[float]) -> float:
    return point[0]


def _contribution(points: Timeline, drop: float | None, t: float) -> float:
    """The value of one shifted series at time ``t`` (0 before it starts and after it ends)."""
    if not points or t < points[0][0]:
        return 0.0
    if drop is not None and (t > drop or (t == drop and drop > points[-1][0])):
        return 0.0
    lo, hi = 0, len(points)
    while hi - lo > 1:  # the last point at or before t
        mid = (lo + hi) // 2
        if points[mid][0] <= t:
            lo = mid
        else:
            hi = mid
    return points[lo][1]


def sum_steps(series: Iterable[Series]) -> Timeline:
    """The sum of step functions: every input holds its last value until its process ends,
    and then counts as zero (a finished process's memory is gone), so that runs one after
    the other do not pile up. Points with the value of their predecessor are left out."""
    shifted: list[tuple[Timeline, float | None]] = []
    for s in series:
        points = sorted(([float(p[0]) + s.shift_s, float(p[1])] for p in s.points), key=_time)
        shifted.append((points, None if s.end_s is None else s.end_s + s.shift_s))
    last = max((pts[-1][0] for pts, _ in shifted if pts), default=None)
    if last is None:
        return []
    # Where each input drops to zero: its end, or its last point when a point came after
    # the end (clocks disagree a little); never after the result's last point.
    drops: list[float | None] = []
    for pts, end in shifted:
        drop = None if end is None or not pts else max(end, pts[-1][0])
        drops.append(drop if drop is not None and drop < last else None)
    times = sorted({p[0] for pts, _ in shifted for p in pts} | {d for d in drops if d is not None})
    result: Timeline = []
    for i, t in enumerate(times):
        value = round(sum(_contribution(p, d, t) for (p, _), d in zip(shifted, drops)), _DIGITS)
        if result and value == result[-1][1] and i < len(times) - 1:
            continue
        result.append([round(t, _DIGITS), value])
    return result


def _farthest(points: Sequence[Sequence[float]], a: int, b: int) -> tuple[float, int]:
    """The point strictly between ``a`` and ``b`` farthest (vertically) from the chord a-b."""
    (t0, v0), (t1, v1) = points[a], points[b]
    best, where = -1.0, -1
    for i in range(a + 1, b):
        t, v = points[i]
        on_chord = v0 if t1 == t0 else v0 + (v1 - v0) * (t - t0) / (t1 - t0)
        d = abs(v - on_chord)
        if d > best:
            best, where = d, i
    return best, where


def reduce(points: Sequence[Sequence[float]], cap: int) -> Timeline:
    """At most ``cap`` of ``points``, chosen by Ramer-Douglas-Peucker: starting from the
    first and last point, repeatedly keep the point farthest from the polyline kept so far.
    Distances are vertical (MB), so the time unit does not weigh in."""
    pts = [[float(p[0]), float(p[1])] for p in points]
    if len(pts) <= cap:
        return pts
    if cap < 2:
        return pts[-cap:] if cap > 0 else []
    import heapq  # here: most runs' timelines are short, and every import costs the run

    keep = {0, len(pts) - 1}
    heap: list[tuple[float, int, int, int]] = []

    def push(a: int, b: int) -> None:
        if b - a > 1:
            d, i = _farthest(pts, a, b)
            heapq.heappush(heap, (-d, i, a, b))

    push(0, len(pts) - 1)
    while heap and len(keep) < cap:
        _, i, a, b = heapq.heappop(heap)
        keep.add(i)
        push(a, i)
        push(i, b)
    return [pts[i] for i in sorted(keep)]


def resample(
    points: Sequence[Sequence[float]], cells: int, end_s: float | None = None
) -> list[float]:
    """The step function of ``points`` over ``[0, end_s]`` cut into ``cells`` equal cells:
    its time-weighted mean over each cell (0 before the first point). ``end_s`` defaults to
    the last point's time (and is never earlier). Empty for no points."""
    pts = sorted(([float(p[0]), float(p[1])] for p in points), key=_time)
    if not pts or cells <= 0:
        return []
    end = max(float(end_s or 0.0), pts[-1][0])
    if end <= 0:
        return [pts[-1][1]] * cells
    # The steps as (start, value) from 0 on; each holds until the next one starts.
    steps = [(0.0, 0.0)] + [(t, v) for t, v in pts if t >= 0]
    width = end / cells
    values: list[float] = []
    i = 0
    for cell in range(cells):
        lo, hi = cell * width, (cell + 1) * width
        while i + 1 < len(steps) and steps[i + 1][0] <= lo:
            i += 1
        area, j = 0.0, i
        while j < len(steps) and steps[j][0] < hi:
            start = max(lo, steps[j][0])
            stop = min(hi, steps[j + 1][0]) if j + 1 < len(steps) else hi
            area += steps[j][1] * max(0.0, stop - start)
            j += 1
        values.append(area / width)
    return values


# --------------------------------------------------------------------------- leaks


class Leak:
    __slots__ = ("likelihood", "line", "lineno", "path", "rate_mb_s")

    def __init__(
        self, path: str, lineno: int, likelihood: float, rate_mb_s: float, line: Entry | None
    ) -> None:
        self.path = path
        self.lineno = lineno
        self.likelihood = likelihood
        self.rate_mb_s = rate_mb_s
        self.line = line  # the line object, when the file lists it


def leaks(profile: Entry) -> list[Leak]:
    """Every file's possible leaks, most likely first (then fastest, then by place)."""
    found: list[Leak] = []
    if not is_profiled(profile):
        return found
    for path, entry in profile["files"].items():
        lines = {int(ln["lineno"]): ln for ln in entry["lines"]}
        for leak in entry.get("leaks") or []:
            n = int(leak["lineno"])
            found.append(
                Leak(path, n, _num(leak["likelihood"]), _num(leak["rate_mb_s"]), lines.get(n))
            )
    found.sort(key=lambda k: (-k.likelihood, -k.rate_mb_s, k.path, k.lineno))
    return found


def sorted_leaks(items: Iterable[Entry]) -> list[dict[str, Any]]:
    """Leak entries in the documented order: likelihood descending (then line number)."""
    out = [dict(x) for x in items]
    out.sort(key=lambda x: (-_num(x["likelihood"]), int(x["lineno"])))
    return out


__all__ = [
    "FOOTPRINT_POINTS",
    "LINE_KEYS",
    "LINE_POINTS",
    "LINE_POINTS_WRITTEN",
    "LIVE_KEYS",
    "PROCESS_KEYS",
    "SPLIT_KEYS",
    "TOP_KEYS",
    "Leak",
    "Series",
    "add_line",
    "add_split",
    "alloc_mb",
    "copy_mb",
    "finish_line",
    "has_memory",
    "is_profiled",
    "leaks",
    "python_fraction",
    "python_mb",
    "reduce",
    "resample",
    "share",
    "sorted_leaks",
    "sum_steps",
    "zero_line",
]
