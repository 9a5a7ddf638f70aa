"""Reading and writing spyglass JSON profiles (docs/profile-format.md).

Reading checks the document structurally in plain Python (required keys and their types),
so that every reporter can rely on them; the JSON Schema in ``spyglass/schema`` says the
same thing for other tools and for the test suite. Keys this version does not know are
ignored, so additive extensions of the schema stay readable. A version 1 document (from
before memory profiling) is read as the version 2 document it is: ``memory_profiled`` false.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Callable, Union

from spyglass import gpu_fields, memory
from spyglass.profile_bounds import (
    bounds_problem,
    frames_problem,
    may_be_out_of_bounds,
    parse_int,
)
from spyglass.schema import MIN_SCHEMA_VERSION, PROFILE_FORMAT, SCHEMA_VERSION

Profile = dict[str, Any]
PathLike = Union[str, "os.PathLike[str]"]

TIME_KEYS = ("cpu_python_s", "cpu_native_s", "cpu_system_s", "wait_s")
TIMES_KEYS = (*TIME_KEYS, "samples")
# Parts of the figures above, absent from profiles of older versions: the collector's share
# of cpu_python_s.
PART_KEYS = ("cpu_gc_s",)


class ProfileError(Exception):
    """A profile cannot be read or written. ``str(error)`` is one line meant for users."""


# --------------------------------------------------------------------------- type checks


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_seconds(v: object) -> bool:
    return _is_number(v) and v >= 0  # type: ignore[operator]


def _is_count(v: object) -> bool:
    return _is_int(v) and v >= 0  # type: ignore[operator]


def _is_str_list(v: object) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _is_fraction(v: object) -> bool:
    return _is_number(v) and 0 <= v <= 1  # type: ignore[operator]


def _is_timeline(cap: int) -> Callable[[object], bool]:
    def check(v: object) -> bool:
        return (
            isinstance(v, list)
            and len(v) <= cap
            and all(
                isinstance(p, list) and len(p) == 2 and _is_seconds(p[0]) and _is_number(p[1])
                for p in v
            )
        )

    return check


def _is_leak(v: object) -> bool:
    return (
        isinstance(v, dict)
        and _is_count(v.get("lineno"))
        and _is_fraction(v.get("likelihood"))
        and _is_seconds(v.get("rate_mb_s"))
    )


# Each kind: (predicate, what the value should be).
_KINDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "seconds": (_is_seconds, "a non-negative number"),
    "count": (_is_count, "a non-negative integer"),
    "positive": (lambda v: _is_number(v) and v > 0, "a positive number"),  # type: ignore[operator]
    "number": (_is_number, "a number"),
    "int": (_is_int, "an integer"),
    "int?": (lambda v: v is None or _is_int(v), "an integer or null"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "str?": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "list": (lambda v: isinstance(v, list), "a list"),
    "object": (lambda v: isinstance(v, dict), "an object"),
    "str-list": (_is_str_list, "a list of strings"),
    "mb": (_is_seconds, "a non-negative number"),
    "fraction": (_is_fraction, "a number from 0 to 1"),
    "lineno?": (lambda v: v is None or _is_count(v), "a line number or null"),
    "footprint": (
        _is_timeline(memory.FOOTPRINT_POINTS),
        f"a list of at most {memory.FOOTPRINT_POINTS} [t_s, mb] pairs",
    ),
    "line-timeline": (
        _is_timeline(memory.LINE_POINTS),
        f"a list of at most {memory.LINE_POINTS} [t_s, mb] pairs",
    ),
    "leaks": (
        lambda v: isinstance(v, list) and all(_is_leak(x) for x in v),
        "a list of {lineno, likelihood, rate_mb_s} objects",
    ),
    "functions-option": (
        lambda v: (
            isinstance(v, list)
            and all(
                isinstance(x, list) and len(x) == 2 and isinstance(x[0], str) and _is_count(x[1])
                for x in v
            )
        ),
        "a list of [file, first_lineno] pairs",
    ),
}

_TIMES = tuple((k, "count" if k == "samples" else "seconds") for k in TIMES_KEYS)
_TOP = (
    ("spyglass_version", "str"),
    ("python_version", "str"),
    ("platform", "str"),
    ("program", "str"),
    ("argv", "str-list"),
    ("exit_status", "int?"),
    ("started_at", "number"),
    ("elapsed_s", "seconds"),
    ("interval_s", "positive"),
    *_TIMES,
    ("memory_profiled", "bool"),
    ("unattributed", "object"),
    ("threads", "list"),
    ("files", "object"),
    ("frames", "list"),
    ("stacks", "list"),
    ("options", "object"),
)
# Keys outside the schema that readers still interpret (merging adds them up).
_OPTIONAL_TOP = (("dropped_samples", "count"),)
_THREAD = (("tid", "int"), ("name", "str?"), *_TIMES)
_FILE = (*_TIMES, ("lines", "list"), ("functions", "list"))
_LINE = (("lineno", "count"), ("source", "str"), *_TIMES)
_FUNCTION = (("name", "str"), ("first_lineno", "count"), *_TIMES)
_FRAME = (("file", "str"), ("function", "str"), ("lineno", "int"))
_STACK = (("frames", "list"), *_TIMES)
# The keys that memory_profiled: true adds (docs/profile-format.md, schema version 2).
_MEM_TOP = (
    ("memory_window_mb", "positive"),
    ("copy_window_mb", "positive"),
    ("mem_alloc_mb", "mb"),
    ("mem_free_mb", "mb"),
    ("mem_python_fraction", "fraction"),
    ("mem_samples", "count"),
    ("copy_mb", "mb"),
    ("copy_mb_s", "mb"),
    ("max_footprint_mb", "mb"),
    ("max_footprint_file", "str?"),
    ("max_footprint_lineno", "lineno?"),
    ("footprint_timeline", "footprint"),
    ("native_thread_alloc_mb", "mb"),
)
_MEM_SPLIT = (("mem_alloc_mb", "mb"), ("copy_mb", "mb"))
_MEM_PROCESS = (("max_footprint_mb", "mb"), *_MEM_SPLIT)
_MEM_FILE = (*_MEM_SPLIT, ("leaks", "leaks"))
_MEM_LINE = (
    ("mem_alloc_mb", "mb"),
    ("mem_python_fraction", "fraction"),
    ("mem_avg_mb", "mb"),
    ("mem_peak_mb", "mb"),
    ("mem_share", "fraction"),
    ("mem_timeline", "line-timeline"),
    ("mem_samples", "count"),
    ("copy_mb", "mb"),
    ("copy_mb_s", "mb"),
)
_OPTIONS = (
    ("program_path", "str-list"),
    ("profile_all", "bool"),
    ("profile_only", "str-list"),
    ("profile_exclude", "str-list"),
    ("functions", "functions-option"),
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


def _check_object(
    obj: object, spec: tuple[tuple[str, str], ...], where: str, problems: list[str]
) -> bool:
    """Check ``obj`` against ``spec``; return True when its keys all have the right type."""
    if not isinstance(obj, dict):
        problems.append(f"{where} should be an object, got {_type_name(obj)}")
        return False
    ok = True
    for key, kind in spec:
        at = f"{where}.{key}" if where else key
        if key not in obj:
            problems.append(f"missing key {key!r}" + (f" in {where}" if where else ""))
            ok = False
            continue
        predicate, expected = _KINDS[kind]
        if not predicate(obj[key]):
            problems.append(f"{at} should be {expected}, got {_type_name(obj[key])}")
            ok = False
    return ok


def check_profile(doc: object) -> list[str]:
    """Return the structural problems of a decoded profile (empty when it is well formed).

    Checks ``format``, ``schema_version`` (the current one: see ``upgrade`` for older ones)
    and then every required key and its type, down to lines, functions, frames and stacks,
    like the JSON Schema does (unknown keys allowed). The memory keys are required when
    ``memory_profiled`` is true.
    """
    problems: list[str] = []
    if not isinstance(doc, dict) or doc.get("format") != PROFILE_FORMAT:
        return [f"format is not {PROFILE_FORMAT!r}"]
    if doc.get("schema_version") != SCHEMA_VERSION or isinstance(doc["schema_version"], bool):
        return [f"schema_version is not {SCHEMA_VERSION}"]
    _check_object(doc, _TOP, "", problems)
    optional = tuple((k, kind) for k, kind in _OPTIONAL_TOP if k in doc)
    _check_object(doc, optional, "", problems)
    containers = [(key, kind) for key, kind in _TOP if kind in ("list", "object")]
    if any(not _KINDS[kind][0](doc.get(key)) for key, kind in containers):
        return problems  # the nested checks below need the containers
    mem = doc.get("memory_profiled") is True
    if mem:
        _check_object(doc, _MEM_TOP, "", problems)
    _check_object(doc["unattributed"], _TIMES, "unattributed", problems)
    _check_object(doc["options"], _OPTIONS, "options", problems)
    for i, thread in enumerate(doc["threads"]):
        _check_object(thread, _THREAD + (_MEM_SPLIT if mem else ()), f"threads[{i}]", problems)
    for i, frame in enumerate(doc["frames"]):
        _check_object(frame, _FRAME, f"frames[{i}]", problems)
    for i, stack in enumerate(doc["stacks"]):
        spec = _STACK + (_MEM_SPLIT if mem else ())
        if _check_object(stack, spec, f"stacks[{i}]", problems) and not all(
            _is_count(f) for f in stack["frames"]
        ):
            problems.append(f"stacks[{i}].frames should be a list of frame indexes")
    _check_processes(doc, mem, problems)
    for path, entry in doc["files"].items():
        where = f"files[{json.dumps(path)}]"
        if not _check_object(entry, _FILE + (_MEM_FILE if mem else ()), where, problems):
            continue
        for i, line in enumerate(entry["lines"]):
            spec = _LINE + (_MEM_LINE if mem else ())
            _check_object(line, spec, f"{where}.lines[{i}]", problems)
        for i, func in enumerate(entry["functions"]):
            spec = _FUNCTION + (_MEM_LINE if mem else ())
            _check_object(func, spec, f"{where}.functions[{i}]", problems)
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
        _check_object(entry, _MEM_PROCESS if mem else (), f"processes[{i}]", problems)


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
        for kind in ("lines", "functions"):
            for item in entry[kind]:
                at = f"{where}.{kind}[{item.get('lineno', item.get('first_lineno'))}]"
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
    """A document of an older schema version as the current version reads it: a shallow
    copy (the input is left alone). Version 1 had no memory profiling."""
    if doc.get("schema_version") == 1:
        return {**doc, "schema_version": SCHEMA_VERSION, "memory_profiled": False}
    return doc


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
