"""Reading and writing spyglass JSON profiles (docs/profile-format.md).

Reading checks the document structurally in plain Python (required keys and their types),
so that every reporter can rely on them; the JSON Schema in ``spyglass/schema`` says the
same thing for other tools and for the test suite. Keys this version does not know are
ignored, so additive extensions of the schema stay readable. Older documents are read as
the current version (``upgrade``): version 1, from before memory profiling, with
``memory_profiled`` false; version 3's compact rows and frames are filled in again.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Union

from spyglass.profile_model import fields, gpu_fields, native_functions
from spyglass.profile_model import memory_figures as memory
from spyglass.profile_model.bounds import (
    bounds_problem,
    frames_problem,
    may_be_out_of_bounds,
    parse_int,
)
from spyglass.profile_model.compact import expanded
from spyglass.profile_model.kinds import kind
from spyglass.schema import MIN_SCHEMA_VERSION, PROFILE_FORMAT, SCHEMA_VERSION

Profile = dict[str, Any]
PathLike = Union[str, "os.PathLike[str]"]

#: The times every aggregate carries (fields.TIMES_LEVELS): the seconds every version has
#: and the samples behind them; PART_KEYS, the figures of newer versions that add up the
#: same way (absent: 0; cpu_gc_s is the collector's part of cpu_python_s).
TIME_KEYS = fields.TIME_KEYS
TIMES_KEYS = (*TIME_KEYS, "samples")
PART_KEYS = fields.PART_KEYS


class ProfileError(Exception):
    """A profile cannot be read or written. ``str(error)`` is one line meant for users."""


# --------------------------------------------------------------------------- type checks

Spec = tuple[tuple[str, str], ...]  # (key, kind) pairs
# Keys a profile may lack (older versions, some runs) whose value is checked when present:
# plain numbers, which reporters add up and format.
_PLAIN = ("seconds", "count", "mb", "fraction")


def _spec(level: str, mem: bool) -> Spec:
    """What every object of ``level`` must have (in a memory profile when ``mem``): not
    the figures its rows leave out when they are 0 (fields.ZERO_LEVELS)."""
    wanted = ("required", "memory") if mem else ("required",)
    zeros = fields.zero_omitted(level)
    return tuple(
        (f.name, f.kind) for f in fields.at(level) if f.presence in wanted and f.name not in zeros
    )


def _present(obj: object, level: str) -> Spec:
    """The keys ``obj`` has that a profile may lack, and that are checked when present."""
    if not isinstance(obj, dict):
        return ()
    zeros = fields.zero_omitted(level)
    return tuple(
        (f.name, f.kind)
        for f in fields.at(level)
        if (f.presence not in ("required", "memory") or f.name in zeros)
        and f.kind in _PLAIN
        and f.name in obj
    )


def _type_name(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def _check_object(obj: object, spec: Spec, where: str, problems: list[str]) -> bool:
    """Check ``obj`` against ``spec``; return True when its keys all have the right type."""
    if not isinstance(obj, dict):
        problems.append(f"{where} should be an object, got {_type_name(obj)}")
        return False
    ok = True
    for key, name in spec:
        at = f"{where}.{key}" if where else key
        if key not in obj:
            problems.append(f"missing key {key!r}" + (f" in {where}" if where else ""))
            ok = False
            continue
        expected = kind(name)
        if not expected.check(obj[key]):
            problems.append(f"{at} should be {expected.expected}, got {_type_name(obj[key])}")
            ok = False
    return ok


def _check_level(obj: object, level: str, mem: bool, where: str, problems: list[str]) -> bool:
    spec = _spec(level, mem) + _present(obj, level)
    return _check_object(obj, spec, where, problems)


def check_profile(doc: object) -> list[str]:
    """Return the structural problems of a decoded profile (empty when it is well formed).

    Checks ``format``, ``schema_version`` (the current one: see ``upgrade`` for older ones)
    and then every required key and its type, down to lines, functions, frames and stacks,
    as the field table (fields.FIELDS) describes them and the JSON Schema does (unknown
    keys allowed). The memory keys are required when ``memory_profiled`` is true.
    """
    problems: list[str] = []
    if not isinstance(doc, dict) or doc.get("format") != PROFILE_FORMAT:
        return [f"format is not {PROFILE_FORMAT!r}"]
    if doc.get("schema_version") != SCHEMA_VERSION or isinstance(doc["schema_version"], bool):
        return [f"schema_version is not {SCHEMA_VERSION}"]
    _check_level(doc, "run", False, "", problems)
    containers = [f for f in fields.at("run") if f.presence == "required" and ":" in f.kind]
    if any(not kind(f.kind).check(doc.get(f.name)) for f in containers):
        return problems  # the nested checks below need the containers
    mem = doc.get("memory_profiled") is True
    if mem:
        memory_keys = tuple((f.name, f.kind) for f in fields.at("run") if f.presence == "memory")
        _check_object(doc, memory_keys, "", problems)
    _check_level(doc["unattributed"], "unattributed", mem, "unattributed", problems)
    _check_level(doc["options"], "options", mem, "options", problems)
    for i, thread in enumerate(doc["threads"]):
        _check_level(thread, "thread", mem, f"threads[{i}]", problems)
    for i, frame in enumerate(doc["frames"]):
        _check_level(frame, "frame", mem, f"frames[{i}]", problems)
    for i, stack in enumerate(doc["stacks"]):
        _check_level(stack, "stack", mem, f"stacks[{i}]", problems)
    _check_processes(doc, mem, problems)
    native_functions.check(doc, problems)
    for path, entry in doc["files"].items():
        where = f"files[{json.dumps(path)}]"
        if not _check_level(entry, "file", mem, where, problems):
            continue
        for level, key in (("line", "lines"), ("function", "functions"), ("leak", "leaks")):
            for i, item in enumerate(entry.get(key) or []):
                _check_level(item, level, mem, f"{where}.{key}[{i}]", problems)
    problems += gpu_fields.problems(doc)  # docs/gpu.md: present when gpu_profiled
    return problems


def _check_processes(doc: dict[str, Any], mem: bool, problems: list[str]) -> None:
    """``processes`` is loosely specified (objects), except for its memory keys."""
    if "processes" not in doc:
        return
    processes = doc["processes"]
    if not isinstance(processes, list):
        problems.append(f"processes should be a list, got {_type_name(processes)}")
        return
    for i, entry in enumerate(processes):
        _check_level(entry, "process", mem, f"processes[{i}]", problems)


# --------------------------------------------------------------------------- consistency


def _close(a: float, b: float, n: int, tolerance: float) -> bool:
    return math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance * max(1, n))


def _sum_times(items: list[Any]) -> dict[str, float]:
    return {k: sum(item[k] for item in items) for k in TIMES_KEYS}


def _compare(
    total: Any, parts: list[Any], what: str, problems: list[str], tolerance: float
) -> None:
    sums = _sum_times(parts)
    for key in TIMES_KEYS:
        if not _close(float(total[key]), sums[key], len(parts), tolerance):
            problems.append(f"{what}: {key} is {total[key]} but its parts add up to {sums[key]:g}")


def check_consistency(profile: Profile, *, tolerance: float = 1e-6) -> list[str]:
    """Return the ways a well-formed profile breaks the arithmetic and ordering rules.

    File totals equal the sum of their lines and of their functions, the top-level totals
    equal the files plus ``unattributed`` and the sum of the threads, stacks stay within
    the totals, lists are sorted as documented, and stack frames index the frame table.
    Meant for tests of producers; readers do not require it.
    """
    problems: list[str] = []
    files: dict[str, Any] = profile["files"]
    for path, entry in files.items():
        where = f"files[{json.dumps(path)}]"
        if not (os.path.isabs(path) or (path.startswith("<") and path.endswith(">"))):
            problems.append(f"{where}: key is neither an absolute path nor a <pseudo-file>")
        _compare(entry, entry["lines"], f"{where} vs its lines", problems, tolerance)
        _compare(entry, entry["functions"], f"{where} vs its functions", problems, tolerance)
        linenos = [line["lineno"] for line in entry["lines"]]
        if linenos != sorted(set(linenos)):
            problems.append(f"{where}.lines are not sorted by unique lineno")
        firsts = [func["first_lineno"] for func in entry["functions"]]
        if firsts != sorted(firsts):
            problems.append(f"{where}.functions are not sorted by first_lineno")
    parts = [*files.values(), profile["unattributed"]]
    _compare(profile, parts, "totals vs files + unattributed", problems, tolerance)
    _compare(profile, profile["threads"], "totals vs threads", problems, tolerance)
    stacks: list[Any] = profile["stacks"]
    stack_sums = _sum_times(stacks)
    for key in TIMES_KEYS:
        if stack_sums[key] > float(profile[key]) * (1 + tolerance) + tolerance * len(stacks):
            problems.append(f"stacks add up to more {key} than the totals")
    totals = [sum(float(s[k]) for k in TIME_KEYS) for s in stacks]
    if any(b > a * (1 + tolerance) + tolerance for a, b in zip(totals, totals[1:])):
        problems.append("stacks are not sorted by descending total time")
    n_frames = len(profile["frames"])
    for i, stack in enumerate(stacks):
        if any(f >= n_frames for f in stack["frames"]):
            problems.append(f"stacks[{i}] indexes a frame beyond the frame table")
        elif any(profile["frames"][f]["file"] == "<truncated>" for f in stack["frames"][1:]):
            problems.append(f"stacks[{i}] has a <truncated> frame that is not its first")
    if memory.is_profiled(profile):
        _memory_consistency(profile, problems, tolerance)
    return problems


def _increasing(timeline: list[Any]) -> bool:
    return all(a[0] < b[0] for a, b in zip(timeline, timeline[1:]))


def _memory_consistency(profile: Profile, problems: list[str], tolerance: float) -> None:
    """The memory rules: files add up their lines, and the whole run at least its files;
    shares and rates derive from the totals; timelines go forward in time; leaks are sorted
    and name lines of their file."""
    total = float(profile["mem_alloc_mb"])
    elapsed = float(profile["elapsed_s"])
    files: dict[str, Any] = profile["files"]
    if not _increasing(profile["footprint_timeline"]):
        problems.append("footprint_timeline is not in increasing time order")
    rate = float(profile["copy_mb"]) / elapsed if elapsed > 0 else 0.0
    if not math.isclose(float(profile["copy_mb_s"]), rate, rel_tol=1e-3, abs_tol=1e-3):
        problems.append(f"copy_mb_s is {profile['copy_mb_s']} but copy_mb / elapsed_s is {rate:g}")
    in_files = sum(float(entry["mem_alloc_mb"]) for entry in files.values())
    if in_files > total * (1 + tolerance) + tolerance * max(1, len(files)):
        problems.append(f"files allocate {in_files:g} MB, more than the run's mem_alloc_mb")
    for path, entry in files.items():
        where = f"files[{json.dumps(path)}]"
        lines = entry["lines"]
        for key in memory.SPLIT_KEYS:
            parts = sum(float(line[key]) for line in lines)
            if not _close(float(entry[key]), parts, len(lines), tolerance):
                problems.append(f"{where}: {key} is {entry[key]} but its lines add up to {parts:g}")
        for group in ("lines", "functions"):
            for item in entry[group]:
                at = f"{where}.{group}[{item.get('lineno', item.get('first_lineno'))}]"
                expected = memory.share(float(item["mem_alloc_mb"]), total)
                if not math.isclose(float(item["mem_share"]), expected, abs_tol=1e-3):
                    problems.append(f"{at}: mem_share is {item['mem_share']}, not {expected:g}")
                if not _increasing(item["mem_timeline"]):
                    problems.append(f"{at}: mem_timeline is not in increasing time order")
        likelihoods = [float(leak["likelihood"]) for leak in entry["leaks"]]
        if likelihoods != sorted(likelihoods, reverse=True):
            problems.append(f"{where}.leaks are not sorted by descending likelihood")
        linenos = {int(line["lineno"]) for line in lines}
        if any(int(leak["lineno"]) not in linenos for leak in entry["leaks"]):
            problems.append(f"{where}.leaks name a line that is not in its lines")


# --------------------------------------------------------------------------- reading


def _read_bytes(path: PathLike, name: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise ProfileError(f"{name} does not exist") from None
    except IsADirectoryError:
        raise ProfileError(f"{name} is a directory, not a profile") from None
    except PermissionError:
        raise ProfileError(f"cannot read {name}: permission denied") from None
    except OSError as e:
        reason = (e.strerror or str(e)).lower()
        raise ProfileError(f"cannot read {name}: {reason}") from None


def _text(data: bytes, name: str) -> str:
    if not data.strip():
        raise ProfileError(f"{name} is empty, not a spyglass profile")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ProfileError(f"{name} is not valid JSON (not UTF-8 text at byte {e.start})") from None


def _decode(text: str, name: str) -> object:
    try:
        # Long integers and Infinity/NaN are read as floats: validation names their path.
        return json.loads(text, parse_int=parse_int)
    except json.JSONDecodeError as e:
        detail = e.msg[:1].lower() + e.msg[1:]
        raise ProfileError(
            f"{name} is not valid JSON (line {e.lineno}, column {e.colno}): {detail}"
        ) from None
    except RecursionError:
        raise ProfileError(f"{name} is not valid JSON (nested too deeply)") from None
    except (ValueError, MemoryError) as e:
        raise ProfileError(f"{name} cannot be read: {e}") from None


def _readable_versions() -> str:
    if MIN_SCHEMA_VERSION == SCHEMA_VERSION:
        return f"version {SCHEMA_VERSION}"
    joiner = " and " if SCHEMA_VERSION == MIN_SCHEMA_VERSION + 1 else " to "
    return f"versions {MIN_SCHEMA_VERSION}{joiner}{SCHEMA_VERSION}"


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """A document as the current version reads it, every figure of its thread and stack
    rows there (version 3 leaves out those that are 0): the input itself when it has them
    all, else a copy as deep as the filling needs (the input is left alone). Version 1 had
    no memory profiling; version 2 wrote every figure."""
    version = doc.get("schema_version")
    if version == 1:
        doc = {**doc, "schema_version": SCHEMA_VERSION, "memory_profiled": False}
    elif version == 2:
        doc = {**doc, "schema_version": SCHEMA_VERSION}
    return expanded(doc)


def validate(doc: object, name: str = "the profile", *, text: str | None = None) -> Profile:
    """Check a decoded document and return it as a profile, or raise ProfileError.

    A document of an older schema version that this spyglass still reads comes back
    upgraded (a new dict, see ``upgrade``); a current one comes back as it is.
    ``name`` is how messages refer to the document (normally its file name).
    """
    if not isinstance(doc, dict) or doc.get("format") != PROFILE_FORMAT:
        raise ProfileError(f"{name} is not a spyglass profile")
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ProfileError(
            f"{name} is not a valid spyglass profile: schema_version should be an integer, "
            f"got {_type_name(version)}"
        )
    if not MIN_SCHEMA_VERSION <= version <= SCHEMA_VERSION:
        advice = (
            "upgrade spyglass"
            if version > SCHEMA_VERSION
            else "read it with the spyglass that wrote it, or profile again"
        )
        raise ProfileError(
            f"{name} was written with schema version {version}; "
            f"this spyglass reads {_readable_versions()}; {advice}"
        )
    # A large profile is walked value by value only when its text hints at a bad value.
    bad = bounds_problem(doc) if text is None or may_be_out_of_bounds(text) else None
    if bad is not None:
        raise ProfileError(f"{name} is not a valid spyglass profile: {bad}")
    doc = upgrade(doc)
    problems = check_profile(doc)
    if not problems:
        bad = frames_problem(doc)
        problems = [bad] if bad is not None else []
    if problems:
        n = len(problems) - 1
        more = f" (and {n} more problem{'s' if n > 1 else ''})" if n else ""
        raise ProfileError(f"{name} is not a valid spyglass profile: {problems[0]}{more}")
    return doc


def load_profile(path: PathLike) -> Profile:
    """Read and check a spyglass profile; raise ProfileError with a one-line message."""
    name = os.fspath(path)
    text = _text(_read_bytes(path, name), name)
    return validate(_decode(text, name), name, text=text)


# --------------------------------------------------------------------------- writing


def dump_profile(profile: Profile, path: PathLike, *, indent: int | None = None) -> None:
    """Write ``profile`` as JSON to ``path`` (``-``: standard output) without harming what
    is there (spyglass.outfile): a regular file is replaced atomically, so that readers
    see the old file or the new one, never half of one; a device or FIFO is written in
    place. Raises ProfileError on failure."""
    from spyglass.outfile import write_output
    from spyglass.safe_text import json_text_safe

    name = os.fspath(path)
    separators: tuple[str, str] = (",", ": ") if indent is not None else (",", ":")
    try:
        text = json.dumps(
            profile, indent=indent, separators=separators, ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as e:
        reason = f"the profile is not JSON-serialisable ({e})"
        raise ProfileError(f"cannot write {name}: {reason}") from None
    try:
        write_output(name, json_text_safe(text) + "\n")
    except OSError as e:
        reason = (e.strerror or str(e)).lower()
        raise ProfileError(f"cannot write {name}: {reason}") from None


__all__ = [
    "PART_KEYS",
    "TIMES_KEYS",
    "TIME_KEYS",
    "Profile",
    "ProfileError",
    "check_consistency",
    "check_profile",
    "dump_profile",
    "load_profile",
    "upgrade",
    "validate",
]
