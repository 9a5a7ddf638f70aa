"""Comparing two profiles: which lines and functions got faster or slower, beyond the noise.

Sampling makes every figure uncertain: a time measured with ``n`` samples is off by about
``σ = time / sqrt(n)`` (queries.uncertainty_s; a figure with time but no sample counts as
one sample). A change ``Δ = after - before`` is at least ``k · sqrt(σ_before² + σ_after²)``
to be flagged, ``k`` being ``threshold_sigma`` (2 by default).

Hundreds of lines and functions are compared at once, and at 2σ each, one in twenty would
be flagged by chance alone: two runs of an unchanged program would always differ somewhere.
So the lines and functions are judged together: each change's two-sided p-value (normal
approximation, ``z = |Δ| / σ``) goes through the Benjamini–Hochberg procedure, which keeps
the expected share of false discoveries among the flagged changes at or below ``fdr``
(5% by default); a change is flagged when it passes both. How many were tested is part of
the result. The total is one figure, judged at ``k`` alone.

Only CPU time is compared; wait has no samples behind it to estimate its noise, and is
reported alongside for information. Which figures are judged and which are shown comes from
the field table (fields.FIELDS, its diff rule): a shown figure other than wait and
allocation is carried in a change's ``others``, before and after.

Lines are matched across edits of the source: by (file, function, stripped source text),
wherever their line numbers moved (a text repeated in a function pairs up in order, or by
the typical move of the other lines), and else by line number alone (a line edited in
place). Lines matched in none of these ways are "new" or "gone".
Functions are matched by file and (qualified) name. Files are matched by path.

When both profiles have memory figures, every change also carries the MB allocated before
and after and their difference (not judged against any noise), and lines that only
allocated are compared too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, Optional

from spyglass.profile_model import fields
from spyglass.profile_model import memory_figures as memory
from spyglass.profile_model import queries as proc
from spyglass.profile_model.io import Profile

DEFAULT_THRESHOLD_SIGMA = 2.0
DEFAULT_FDR = 0.05

Entry = Mapping[str, Any]

# What the field table (fields.FIELDS) says a diff does with each figure of a line: the
# times judged against their noise (CPU), and the figures shown beside the verdict. Wait
# and allocation have places of their own in a Change; any other shown figure travels in
# its ``others``.
_JUDGED_S = tuple(f.name for f in fields.at("line") if f.diff == "judged" and f.unit == "s")
_OWN_PLACE = ("wait_s", "mem_alloc_mb")
_SHOWN = tuple(f.name for f in fields.at("line") if f.diff == "shown" and f.name not in _OWN_PLACE)


class Change(NamedTuple):
    kind: str  # "total", "line" or "function"
    file: str
    name: str  # the function (of the line); "" for the total
    before_lineno: int | None  # the line, or the function's first line; None: not in before
    after_lineno: int | None
    source: str  # the line's text (stripped), "" for functions and the total
    match: str  # "same", "moved", "edited" (line number only), "new" or "gone"
    before_s: float  # CPU seconds
    after_s: float
    before_samples: int
    after_samples: int
    before_wait_s: float
    after_wait_s: float
    delta_s: float  # after - before
    sigma_s: float  # sqrt(σ_before² + σ_after²)
    flagged: bool  # beyond threshold_sigma * sigma_s and (lines, functions) the FDR control
    before_mem_mb: float | None = None  # MB allocated, when both profiles have memory figures
    after_mem_mb: float | None = None
    mem_delta_mb: float | None = None  # after - before
    others: tuple[tuple[str, float, float], ...] = ()  # other shown figures: before, after

    @property
    def verdict(self) -> str:
        """ "slower", "faster", or "noise" (not flagged)."""
        if not self.flagged:
            return "noise"
        return "slower" if self.delta_s > 0 else "faster"

    def as_json(self) -> dict[str, Any]:
        out = self._asdict()
        if self.mem_delta_mb is None:  # no memory figures to compare
            for key in ("before_mem_mb", "after_mem_mb", "mem_delta_mb"):
                del out[key]
        others = out.pop("others")
        if others:
            out["others"] = {
                key: {"before": b, "after": a, "delta": round(a - b, 9)} for key, b, a in others
            }
        out["verdict"] = self.verdict
        return out


class Diff(NamedTuple):
    threshold_sigma: float
    total: Change
    lines: list[Change]  # every line with CPU (or memory) in either profile, by |Δ| descending
    functions: list[Change]  # likewise for functions
    fdr: float = DEFAULT_FDR  # the false discovery rate the flagged changes are held to
    tested: int = 0  # how many changes (lines and functions with CPU) were judged together

    def slower(self, kind: str = "lines") -> list[Change]:
        return [c for c in getattr(self, kind) if c.verdict == "slower"]

    def faster(self, kind: str = "lines") -> list[Change]:
        return [c for c in getattr(self, kind) if c.verdict == "faster"]


def _sigma(time_s: float, samples: int) -> float:
    return proc.uncertainty_s(time_s, max(samples, 1) if time_s > 0 else 0)


def _change(
    kind: str,
    k: float,
    before: Entry | None,
    after: Entry | None,
    *,
    file: str = "",
    name: str = "",
    linenos: tuple[int | None, int | None] = (None, None),
    source: str = "",
) -> Change:
    b_s = _judged(before)
    a_s = _judged(after)
    b_n = int(before["samples"]) if before is not None else 0
    a_n = int(after["samples"]) if after is not None else 0
    sigma = math.hypot(_sigma(b_s, b_n), _sigma(a_s, a_n))
    delta = a_s - b_s
    return Change(
        kind,
        file,
        name,
        linenos[0],
        linenos[1],
        source,
        "same",
        round(b_s, 9),
        round(a_s, 9),
        b_n,
        a_n,
        round(float(before["wait_s"]), 9) if before is not None else 0.0,
        round(float(after["wait_s"]), 9) if after is not None else 0.0,
        round(delta, 9),
        round(sigma, 9),
        abs(delta) > k * sigma,
        others=_others(before, after),
    )


def _judged(entry: Entry | None) -> float:
    """The time a change is judged by (CPU seconds: Python, native and system)."""
    return sum(float(entry.get(key) or 0.0) for key in _JUDGED_S) if entry is not None else 0.0


def _others(before: Entry | None, after: Entry | None) -> tuple[tuple[str, float, float], ...]:
    """The shown figures without a place of their own that either side has."""

    def value(entry: Entry | None, key: str) -> float:
        return round(float(entry.get(key) or 0.0), 9) if entry is not None else 0.0

    present = [k for k in _SHOWN if any(e is not None and k in e for e in (before, after))]
    return tuple((k, value(before, k), value(after, k)) for k in present)


def p_value(change: Change) -> float:
    """The two-sided p-value of ``change`` under no change at all (normal approximation)."""
    if change.sigma_s <= 0:
        return 1.0 if change.delta_s == 0 else 0.0
    return math.erfc(abs(change.delta_s) / change.sigma_s / math.sqrt(2.0))


def benjamini_hochberg(p_values: list[float], fdr: float) -> list[bool]:
    """Which of ``p_values`` are discoveries at false discovery rate ``fdr``: the ``k``
    smallest, ``k`` being the largest rank with ``p_(k) <= k / m · fdr``."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    passed = 0
    for rank, i in enumerate(order, start=1):
        if p_values[i] <= rank / m * fdr:
            passed = rank
    found = [False] * m
    for i in order[:passed]:
        found[i] = True
    return found


def _control_fdr(lines: list[Change], functions: list[Change], fdr: float) -> int:
    """Unflag, in place, the changes the Benjamini–Hochberg procedure does not keep; return
    how many were tested (those with CPU time on either side)."""
    tested = [
        (group, i)
        for group in (lines, functions)
        for i, c in enumerate(group)
        if c.before_s or c.after_s
    ]
    keep = benjamini_hochberg([p_value(group[i]) for group, i in tested], fdr)
    for (group, i), kept in zip(tested, keep):
        if group[i].flagged and not kept:
            group[i] = group[i]._replace(flagged=False)
    return len(tested)


def _text(line: Entry) -> str:
    return " ".join(str(line["source"]).split())


def _owners(profile: Profile, path: str) -> dict[int, str]:
    funcs = profile["files"][path]["functions"]
    return {n: str(funcs[i]["name"]) for n, i in proc.line_functions(profile, path).items()}


Pair = tuple[Optional[Entry], Optional[Entry], str]  # no X | None: 3.9 evaluates this


def _pair_up(b_nos: list[int], a_nos: list[int], shift: int) -> list[tuple[int, int]]:
    """Pair the line numbers of one text in before and after: in order when both have it
    as often, otherwise each of the rarer side's with the nearest (after ``shift``)."""
    if len(b_nos) == len(a_nos):
        return list(zip(b_nos, a_nos))
    flip = len(b_nos) > len(a_nos)
    few, many = (a_nos, list(b_nos)) if flip else (b_nos, list(a_nos))
    sign = -1 if flip else 1
    pairs = []
    for n in few:
        other = min(many, key=lambda m: (abs(n + sign * shift - m), m))
        many.remove(other)
        pairs.append((other, n) if flip else (n, other))
    return pairs


def match_lines(before: Profile, after: Profile, path: str) -> list[Pair]:
    """The lines of ``path`` in ``before`` and in ``after`` paired up: (before's line or
    None, after's line or None, how they were matched), see the module's documentation."""
    b_left = {int(ln["lineno"]): ln for ln in before["files"].get(path, {}).get("lines", [])}
    a_left = {int(ln["lineno"]): ln for ln in after["files"].get(path, {}).get("lines", [])}
    groups: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
    if b_left and a_left:
        for side, profile, left in ((0, before, b_left), (1, after, a_left)):
            owner = _owners(profile, path)
            for n in sorted(left):
                if _text(left[n]):
                    groups.setdefault((owner.get(n, ""), _text(left[n])), ([], []))[side].append(n)
    # The typical move of the lines whose text is unique: for pairing up repeated texts.
    shifts = sorted(a[0] - b[0] for b, a in groups.values() if len(b) == len(a) == 1)
    shift = shifts[len(shifts) // 2] if shifts else 0
    pairs: list[Pair] = []
    for b_nos, a_nos in groups.values():
        for bn, an in _pair_up(b_nos, a_nos, shift):
            pairs.append((b_left.pop(bn), a_left.pop(an), "same" if bn == an else "moved"))
    for n in sorted(b_left.keys() & a_left.keys()):
        how = "same" if _text(b_left[n]) == _text(a_left[n]) else "edited"
        pairs.append((b_left.pop(n), a_left.pop(n), how))
    pairs.extend((line, None, "gone") for line in b_left.values())
    pairs.extend((None, line, "new") for line in a_left.values())
    return pairs


def _function_pairs(before: Profile, after: Profile, path: str) -> list[Pair]:
    def by_name(profile: Profile) -> dict[str, list[Entry]]:
        named: dict[str, list[Entry]] = {}
        funcs = profile["files"].get(path, {}).get("functions", [])
        for fn in sorted(funcs, key=lambda f: int(f["first_lineno"])):
            named.setdefault(str(fn["name"]), []).append(fn)
        return named

    b_named, a_named = by_name(before), by_name(after)
    pairs: list[Pair] = []
    for name in dict.fromkeys([*b_named, *a_named]):
        b_list, a_list = b_named.get(name, []), a_named.get(name, [])
        for i in range(max(len(b_list), len(a_list))):
            b = b_list[i] if i < len(b_list) else None
            a = a_list[i] if i < len(a_list) else None
            if b is not None and a is not None:
                how = "same" if b["first_lineno"] == a["first_lineno"] else "moved"
            else:
                how = "gone" if a is None else "new"
            pairs.append((b, a, how))
    return pairs


def _either(a: Entry | None, b: Entry | None) -> Entry:
    entry = a if a is not None else b
    assert entry is not None
    return entry


def _order(c: Change) -> tuple[float, str, int]:
    return (-abs(c.delta_s), c.file, c.after_lineno or c.before_lineno or 0)


def _lineno(entry: Entry | None, key: str) -> int | None:
    return int(entry[key]) if entry is not None else None


def _busy(pairs: Iterable[Pair], with_memory: bool) -> Iterable[Pair]:
    def busy(e: Entry | None) -> bool:
        return e is not None and (_judged(e) > 0 or (with_memory and memory.alloc_mb(e) > 0))

    return (p for p in pairs if busy(p[0]) or busy(p[1]))


def _with_memory(change: Change, before: Entry | None, after: Entry | None) -> Change:
    b = round(memory.alloc_mb(before), 9) if before is not None else 0.0
    a = round(memory.alloc_mb(after), 9) if after is not None else 0.0
    return change._replace(before_mem_mb=b, after_mem_mb=a, mem_delta_mb=round(a - b, 9))


def diff_profiles(
    before: Profile,
    after: Profile,
    *,
    threshold_sigma: float = DEFAULT_THRESHOLD_SIGMA,
    fdr: float = DEFAULT_FDR,
) -> Diff:
    """Compare ``before`` with ``after`` (see the module's documentation)."""
    if threshold_sigma < 0:
        raise ValueError("threshold_sigma must not be negative")
    if not 0 < fdr <= 1:
        raise ValueError("fdr must be in (0, 1]")
    k = threshold_sigma
    mem = memory.is_profiled(before) and memory.is_profiled(after)
    lines: list[Change] = []
    functions: list[Change] = []
    for path in dict.fromkeys([*before["files"], *after["files"]]):
        owner_b = _owners(before, path) if path in before["files"] else {}
        owner_a = _owners(after, path) if path in after["files"] else {}
        for b, a, how in _busy(match_lines(before, after, path), mem):
            linenos = (_lineno(b, "lineno"), _lineno(a, "lineno"))
            name = owner_a.get(linenos[1] or -1) or owner_b.get(linenos[0] or -1) or ""
            text = _text(_either(a, b))
            change = _change("line", k, b, a, file=path, name=name, linenos=linenos, source=text)
            if mem:
                change = _with_memory(change, b, a)
            lines.append(change._replace(match=how))
        for b, a, how in _busy(_function_pairs(before, after, path), mem):
            name = str(_either(a, b)["name"])
            linenos = (_lineno(b, "first_lineno"), _lineno(a, "first_lineno"))
            change = _change("function", k, b, a, file=path, name=name, linenos=linenos)
            if mem:
                change = _with_memory(change, b, a)
            functions.append(change._replace(match=how))
    tested = _control_fdr(lines, functions, fdr)
    lines.sort(key=_order)
    functions.sort(key=_order)
    total = _change("total", k, before, after)
    if mem:
        total = _with_memory(total, before, after)
    return Diff(threshold_sigma, total, lines, functions, fdr, tested)


def _side(profile: Profile, name: str | None) -> dict[str, Any]:
    return {
        "file": name,
        "program": proc.command_line(profile),
        "started_at": profile["started_at"],
        "elapsed_s": profile["elapsed_s"],
        "cpu_s": round(proc.total_cpu(profile), 9),
        "wait_s": profile["wait_s"],
        "samples": profile["samples"],
    }


def diff_to_json(
    diff: Diff,
    before: Profile,
    after: Profile,
    *,
    before_name: str | None = None,
    after_name: str | None = None,
) -> dict[str, Any]:
    """The JSON document of a diff (``"format": "spyglass-diff"``, version 1)."""
    return {
        "format": "spyglass-diff",
        "version": 1,
        "threshold_sigma": diff.threshold_sigma,
        "fdr": diff.fdr,
        "tested": diff.tested,
        "before": _side(before, before_name),
        "after": _side(after, after_name),
        "total": diff.total.as_json(),
        "lines": [c.as_json() for c in diff.lines],
        "functions": [c.as_json() for c in diff.functions],
    }


__all__ = [
    "DEFAULT_FDR",
    "DEFAULT_THRESHOLD_SIGMA",
    "Change",
    "Diff",
    "benjamini_hochberg",
    "diff_profiles",
    "diff_to_json",
    "match_lines",
    "p_value",
]
