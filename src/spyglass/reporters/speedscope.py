"""The speedscope reporter: a file for https://www.speedscope.app (and other viewers of
speedscope's file format).

A speedscope file holds one or more profiles that share a frame table. A spyglass profile
keeps its stacks aggregated over the whole process (neither per thread nor over time), so
the file holds one "sampled" profile for the process's CPU time and, when the run waited at
all, one for its wait (off-CPU) time. Each aggregated stack is one sample, outermost frame
first, weighted by its time in seconds. Time no Python stack accounts for (threads without
Python frames, for instance) is one more sample of a single ``[no Python stack]`` frame, so
that the weights of each profile add up to the run's total.

Frames are spyglass's frames: the function's name, its file and the line it was executing,
so a function shows once per line it spent time on. Native time goes one frame deeper,
to the native function the samples interrupted (its name, its library as the file).

As in the HTML flame graph and the call tree, each run of Python's import machinery
(``<frozen importlib._bootstrap>`` frames, dozens deep per nested import) is one
``(import)`` frame unless ``fold_imports`` is false: an import tower otherwise sets the
whole graph's height.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from spyglass import __version__
from spyglass.profile_model import native_functions, stack_weights
from spyglass.profile_model import queries as proc
from spyglass.profile_model.io import Profile
from spyglass.reporters.base import Reporter
from spyglass.reporters.call_tree import IMPORT_NAME, IMPORT_PREFIX
from spyglass.safe_text import json_text_safe

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"


def _frame(frame: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": str(frame["function"]) or "<unknown>", "file": frame["file"]}
    if int(frame["lineno"]) > 0:
        out["line"] = int(frame["lineno"])
    return out


def _sampled(name: str, samples: list[list[int]], weights: list[float]) -> dict[str, Any]:
    return {
        "type": "sampled",
        "name": name,
        "unit": "seconds",
        "startValue": 0,
        "endValue": round(sum(weights), 9),
        "samples": samples,
        "weights": weights,
    }


def _folded(stack: list[int], is_import: list[bool], import_frame: int) -> list[int]:
    """``stack`` with each run of import-machinery frames as the one ``import_frame``."""
    out: list[int] = []
    for i in stack:
        if 0 <= i < len(is_import) and is_import[i]:
            if out and out[-1] == import_frame:
                continue
            i = import_frame
        out.append(i)
    return out


def to_speedscope(profile: Profile, *, fold_imports: bool = True) -> dict[str, Any]:
    """The speedscope document (a dict ready for json.dump) of ``profile``; ``fold_imports``:
    each run of import-machinery frames as one ``(import)`` frame."""
    frames = [_frame(f) for f in profile["frames"]]
    is_import = [str(f["file"]).startswith(IMPORT_PREFIX) for f in profile["frames"]]
    fold = fold_imports and any(is_import)
    import_frame = len(frames)
    if fold:
        frames.append({"name": IMPORT_NAME, "file": IMPORT_PREFIX + ">"})
    native_index: dict[tuple[str, str], int] = {}

    def native_frame(key: tuple[str, str]) -> int:
        if key not in native_index:
            native_index[key] = len(frames)
            frames.append({"name": key[0], "file": key[1] or "[native]"})
        return native_index[key]

    def native_frames(entry: Mapping[str, Any]) -> list[int]:
        own = (str(entry["name"]), str(entry["library"]))
        return [native_frame(k) for k in [*native_functions.callers(entry), own]]

    no_stack: int | None = None
    profiles = []
    for weight, title in (("cpu", "CPU"), ("wait", "wait (off-CPU)")):
        if weight == "wait" and float(profile["wait_s"]) <= 0:
            continue
        samples: list[list[int]] = []
        weights: list[float] = []
        for stack in profile["stacks"]:
            value = stack_weights.stack_weight(stack, weight)
            if value > 0:
                python = [int(i) for i in stack["frames"]]
                if fold:
                    python = _folded(python, is_import, import_frame)
                # Mixed stacks: the native functions below the innermost Python frame.
                for native, part in native_functions.stack_parts(stack, weight, value):
                    samples.append(python if native is None else [*python, *native_frames(native)])
                    weights.append(round(part, 9))
        rest = stack_weights.unstacked(profile, weight)
        if rest > 0:
            if no_stack is None:
                no_stack = len(frames)
                frames.append({"name": stack_weights.NO_STACK})
            samples.append([no_stack])
            weights.append(rest)
        profiles.append(_sampled(title, samples, weights))
    return {
        "$schema": SCHEMA_URL,
        "name": f"spyglass · {proc.command_line(profile)}",
        "exporter": f"spyglass@{__version__}",
        "activeProfileIndex": 0,
        "shared": {"frames": frames},
        "profiles": profiles,
    }


class SpeedscopeReporter(Reporter[Profile]):
    """Writes the speedscope JSON document of a profile."""

    name = "speedscope"
    extensions = (".speedscope.json",)
    exact = True

    def __init__(self, *, fold_imports: bool = True) -> None:
        self.fold_imports = fold_imports

    def render(self, doc: Profile) -> str:
        profile = to_speedscope(doc, fold_imports=self.fold_imports)
        text = json.dumps(profile, ensure_ascii=False, allow_nan=False)
        return json_text_safe(text) + "\n"


__all__ = ["SCHEMA_URL", "SpeedscopeReporter", "to_speedscope"]
