"""What a profile's values must stay within for every reporter to render it: checked on
reading, after the structure (io.check_profile).

A profile can come from anywhere (a colleague, a bug report, an attacker): a number that
no run produces (1e308 seconds, Infinity, NaN, an integer of thousands of digits), a
document nested far deeper than the format goes, or a stack naming a frame the frame
table does not have would otherwise surface as a traceback deep in a reporter, or as a
half-written output file. Each is reported with the JSON path of the value.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Far beyond any run (3e7 years of CPU time, 1e15 MB), and small enough that sums over
# millions of lines and products with 1e6 (microseconds) stay finite and exact enough.
MAX_MAGNITUDE = 1e15
# 64-bit integers: thread ids, counts and addresses are never wider.
MAX_INT = 2**64
# The format nests about eight levels deep; keys it does not know may add a few.
MAX_DEPTH = 64
# Integers of more digits than this are read as (infinite or huge) floats, so that the
# checks below name them, instead of int() refusing the whole document (Python caps int
# parsing at 4300 digits) with no clue where.
MAX_INT_DIGITS = 24


class _LongInt(float):
    """An integer too long to read, kept as a float with its number of digits."""

    digits = 0


def parse_int(text: str) -> int | float:
    """json.loads's parse_int: long integers become floats (see MAX_INT_DIGITS)."""
    if len(text) <= MAX_INT_DIGITS:
        return int(text)
    value = _LongInt(float(text))
    value.digits = len(text.lstrip("-"))
    return value


def _path(parts: list[str | int]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif p.isidentifier():
            out += f".{p}" if out else p
        else:
            out += f"[{json.dumps(p)}]"
    return out or "the document"


def _bad_number(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, _LongInt):
        return f"is an integer of {value.digits} digits, beyond 64 bits"
    if isinstance(value, float):
        if not math.isfinite(value):
            return f"is {value!r}, not a finite number"
        if abs(value) > MAX_MAGNITUDE:
            return f"is {value:g}, beyond the {MAX_MAGNITUDE:g} a profile can hold"
    elif isinstance(value, int) and abs(value) > MAX_INT:
        return f"is an integer of {len(str(abs(value)))} digits, beyond 64 bits"
    return None


# In JSON text, what any value out of bounds needs: a special constant, a long run of
# digits, an exponent of 16 or more, or more than MAX_DEPTH open brackets in a row.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_SUSPECT = re.compile(r"Infinity|NaN|(?<![.\d])\d{16,}|[eE]\+?0*(?:1[6-9]|[2-9]\d|\d{3,})")
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_DEPTHS = {"[": 1, "{": 1, "]": -1, "}": -1}


def _nesting(text: str) -> int:
    brackets = _NOT_BRACKETS.sub("", _STRING.sub("", text))
    return max(accumulate(map(_DEPTHS.__getitem__, brackets)), default=0)


def may_be_out_of_bounds(text: str) -> bool:
    """False when the JSON text `text` surely holds no value out of bounds: a scan at the
    speed of the regex engine, so that a large profile is not walked value by value."""
    return _SUSPECT.search(_STRING.sub('""', text)) is not None or _nesting(text) > MAX_DEPTH


def bounds_problem(doc: object) -> str | None:
    """The first value of `doc` out of bounds, as "PATH is ...", or None. Iterative: a
    document nested deeper than the interpreter's recursion limit is reported, not
    crashed on."""
    stack: list[tuple[object, list[str | int]]] = [(doc, [])]
    while stack:
        value, parts = stack.pop()
        if len(parts) > MAX_DEPTH:
            return f"{_path(parts[:MAX_DEPTH])} is nested more than {MAX_DEPTH} levels deep"
        if isinstance(value, dict):
            stack.extend((v, [*parts, k]) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((v, [*parts, i]) for i, v in reversed(list(enumerate(value))))
        else:
            bad = _bad_number(value)
            if bad is not None:
                return f"{_path(parts)} {bad}"
    return None


def frames_problem(doc: dict[str, Any]) -> str | None:
    """A stack with no frame, or naming a frame past the frame table, or None (the structure is
    already checked: stacks[i].frames are lists of non-negative integers)."""
    n = len(doc["frames"])
    for i, frame in enumerate(doc["frames"]):
        if not isinstance(frame["file"], str):  # an index that named no file of frame_files
            return f"frames[{i}].file is {frame['file']}, which names no file of frame_files"
    for i, stack in enumerate(doc["stacks"]):
        if not stack["frames"]:  # the schema's minItems: a stack has at least its leaf
            return f"stacks[{i}].frames is empty"
        for j, f in enumerate(stack["frames"]):
            if f >= n:
                return f"stacks[{i}].frames[{j}] is {f}, past the frame table ({n} frames)"
    return None


__all__ = [
    "MAX_DEPTH",
    "MAX_MAGNITUDE",
    "bounds_problem",
    "frames_problem",
    "may_be_out_of_bounds",
    "parse_int",
]
