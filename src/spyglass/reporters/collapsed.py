"""The collapsed reporter: Brendan Gregg's "folded stacks", one stack per line::

    <module> (/app/main.py:22);main (/app/main.py:16);work (/app/main.py:8) 1021000

Frames go outermost first, separated by semicolons, each written ``function (file:line)``
with the line the function was executing; the count after the last space is the stack's
weight. That is what flamegraph.pl, inferno, speedscope and most flame-graph tools read.

The weight is CPU time in whole microseconds by default; ``weight="samples"`` counts CPU
samples instead and ``weight="wait"`` gives off-CPU time in microseconds (an off-CPU flame
graph). Microseconds are rounded so that the counts add up to the rounded total. A stack's
native time carries one more frame, ``function (library)``, for the native function the
samples interrupted (mixed stacks; see docs/cpu-sampling.md). Time no
Python stack accounts for is one more line, ``[no Python stack]``, so the counts add up to
the run's total. Semicolons and line breaks in names are replaced (by ``,`` and spaces),
since they would break the format.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spyglass.profile_model import native_functions, stack_weights
from spyglass.profile_model.io import Profile
from spyglass.reporters.base import Reporter
from spyglass.safe_text import escape_data

WEIGHTS = ("cpu", "samples", "wait")


def frame_label(frame: Mapping[str, Any]) -> str:
    """``function (file:line)`` with the characters the format reserves replaced."""
    text = f"{frame['function'] or '<unknown>'} ({frame['file']}:{frame['lineno']})"
    return text.replace(";", ",").replace("\r", " ").replace("\n", " ")


def native_label(entry: Mapping[str, Any]) -> str:
    """A native frame: ``function (library)``, reserved characters replaced."""
    text = f"{entry['name']} ({entry['library'] or '?'})"
    return text.replace(";", ",").replace("\r", " ").replace("\n", " ")


def native_chain(entry: Mapping[str, Any]) -> list[str]:
    """A native entry's frames, its outermost caller first and the function itself last."""
    chain = [{"name": n, "library": lib} for n, lib in native_functions.callers(entry)]
    return [native_label(x) for x in [*chain, entry]]


def collapsed_lines(profile: Profile, weight: str = "cpu") -> list[str]:
    """The folded stacks of ``profile``, one string per stack (without newline), heaviest
    first; stacks whose count rounds to zero are left out."""
    if weight not in WEIGHTS:
        raise ValueError(f"weight must be one of {', '.join(WEIGHTS)}, not {weight!r}")
    labels = [frame_label(f) for f in profile["frames"]]
    totals: dict[str, float] = {}
    for stack in profile["stacks"]:
        value = stack_weights.stack_weight(stack, weight)
        if value > 0:
            python = ";".join(labels[i] for i in stack["frames"])
            # Mixed stacks: the native functions a sample interrupted and their native
            # callers, below the Python frames.
            for native, part in native_functions.stack_parts(stack, weight, value):
                key = python if native is None else ";".join([python, *native_chain(native)])
                totals[key] = totals.get(key, 0.0) + part
    rest = stack_weights.unstacked(profile, weight)
    if rest > 0:
        totals[stack_weights.NO_STACK] = totals.get(stack_weights.NO_STACK, 0.0) + rest
    scale = 1.0 if weight == "samples" else 1e6
    lines = []
    running, done = 0.0, 0
    # Round the running sum, not each stack, so the counts add up to the rounded total.
    for key, value in sorted(totals.items(), key=lambda kv: -kv[1]):
        running += value * scale
        count = round(running) - done
        done += count
        if count > 0:
            lines.append(f"{key} {count}")
    return lines


class CollapsedReporter(Reporter[Profile]):
    """Writes folded stacks (see the module's documentation), weighed by ``weight``."""

    name = "collapsed"
    extensions = (".folded", ".collapsed")

    def __init__(self, *, weight: str = "cpu") -> None:
        if weight not in WEIGHTS:
            raise ValueError(f"weight must be one of {', '.join(WEIGHTS)}, not {weight!r}")
        self.weight = weight

    def render(self, doc: Profile) -> str:
        # Text for people's tools: the data's control characters are shown escaped.
        return "".join(f"{line}\n" for line in collapsed_lines(escape_data(doc), self.weight))


__all__ = [
    "WEIGHTS",
    "CollapsedReporter",
    "collapsed_lines",
    "frame_label",
    "native_chain",
    "native_label",
]
