"""The pstats reporter: a file that Python's ``pstats.Stats(path)`` loads (and so snakeviz,
gprof2dot, tuna and the other tools that read cProfile's output).

The file is what ``cProfile`` writes: the marshal of a dict
``{(file, first_line, function): (cc, nc, tt, ct, callers)}``. spyglass samples instead of
tracing every call, so every figure in it is an ESTIMATE from the sampled stacks, not a
measurement of calls:

- ``tt`` (tottime) is the CPU time of the stacks whose innermost frame is the function;
- ``ct`` (cumtime) is the CPU time of the stacks containing the function, counted once per
  stack even when the function is on it several times (recursion);
- ``nc`` and ``cc`` (the "ncalls" column) are NOT call counts: they are the number of CPU
  samples whose stack contains the function, so "percall" columns are seconds per sample;
- ``callers`` come from adjacent frames of the stacks: for a caller/callee pair, the samples
  and CPU time of the stacks where the caller directly called the callee, and as tottime the
  part where the callee was the innermost frame.

Times are CPU seconds (Python + native + system); cProfile's are wall-clock. Wait (off-CPU)
time is not included. CPU time no Python stack accounts for is one pseudo-function,
``~:0(<no Python stack>)``, so that the tottimes add up to the run's CPU time.
A function is keyed by its first line where the profile knows it (profiled files), and
otherwise by the first line spyglass saw it execute.
"""

from __future__ import annotations

import marshal
from typing import Any

from spyglass.profile_model import queries as proc
from spyglass.profile_model import stack_weights
from spyglass.profile_model.io import Profile
from spyglass.reporters.base import Reporter

FuncKey = tuple[str, int, str]
NO_STACK_KEY: FuncKey = ("~", 0, "<no Python stack>")


def _function_keys(profile: Profile) -> list[FuncKey]:
    """The pstats key of every entry of the frame table."""
    known: dict[tuple[str, str], list[int]] = {}
    for path, entry in profile["files"].items():
        for fn in entry["functions"]:
            known.setdefault((path, str(fn["name"])), []).append(int(fn["first_lineno"]))
    seen: dict[tuple[str, str], int] = {}
    for frame in profile["frames"]:
        key = (str(frame["file"]), str(frame["function"]))
        seen[key] = min(seen.get(key, int(frame["lineno"])), int(frame["lineno"]))
    keys: list[FuncKey] = []
    for frame in profile["frames"]:
        path, name, lineno = str(frame["file"]), str(frame["function"]), int(frame["lineno"])
        firsts = sorted(known.get((path, name), []))
        before = [n for n in firsts if n <= lineno]
        first = before[-1] if before else firsts[0] if firsts else seen[(path, name)]
        keys.append((path, first, name))
    return keys


def _bump(table: dict[Any, list[float]], key: Any, *values: float) -> None:
    row = table.setdefault(key, [0.0] * len(values))
    for i, v in enumerate(values):
        row[i] += v


def to_stats(profile: Profile) -> dict[FuncKey, tuple[Any, ...]]:
    """The pstats dict of ``profile`` (see the module's documentation)."""
    keys = _function_keys(profile)
    own: dict[FuncKey, list[float]] = {}  # key -> [samples, tottime, cumtime]
    edges: dict[tuple[FuncKey, FuncKey], list[float]] = {}  # (caller, callee) -> [n, tt, ct]
    for stack in profile["stacks"]:
        cpu, n = proc.cpu_s(stack), int(stack["samples"])
        if cpu <= 0 and n == 0:
            continue
        chain = [keys[i] for i in stack["frames"]]
        _bump(own, chain[-1], 0, cpu, 0)
        for key in set(chain):
            _bump(own, key, n, 0, cpu)
        pairs = set(zip(chain, chain[1:]))
        for pair in pairs:
            _bump(edges, pair, n, 0, cpu)
        if len(chain) > 1:
            _bump(edges, (chain[-2], chain[-1]), 0, cpu, 0)
    rest = stack_weights.unstacked(profile, "cpu")
    if rest > 0 or not own:
        _bump(own, NO_STACK_KEY, stack_weights.unstacked(profile, "samples"), rest, rest)
    callers: dict[FuncKey, dict[FuncKey, tuple[int, int, float, float]]] = {}
    for (caller, callee), (hits, tt, ct) in edges.items():
        count = int(hits)
        callers.setdefault(callee, {})[caller] = (count, count, round(tt, 9), round(ct, 9))
    return {
        key: (int(hits), int(hits), round(tt, 9), round(ct, 9), callers.get(key, {}))
        for key, (hits, tt, ct) in own.items()
    }


def dumps(profile: Profile) -> bytes:
    """The content of the pstats file of ``profile``."""
    return marshal.dumps(to_stats(profile))


class PstatsReporter(Reporter[Profile]):
    """Writes the pstats file of a profile; binary, so it needs a file (or a binary pipe)."""

    name = "pstats"
    extensions = (".pstats", ".prof")
    binary = True
    exact = True

    def render(self, doc: Profile) -> bytes:
        return dumps(doc)


__all__ = ["NO_STACK_KEY", "PstatsReporter", "dumps", "to_stats"]
