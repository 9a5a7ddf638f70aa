"""The C++ writer (and the merge of a run's processes) against the one description of
the profile's fields (spyglass/profile_model/fields.py): a real profile may hold no key
the description lacks, and must hold every key it promises for its kind (CPU-only or
with memory figures), at every level."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import Runner, load_profile
from spyglass.profile_model import fields

PROGRAM = Path(__file__).resolve().parent.parent / "programs" / "every_field.py"


def objects(profile: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Every object of the profile: (its level, where it is, the object)."""
    yield "run", "the top level", profile
    yield "unattributed", "unattributed", profile["unattributed"]
    yield "options", "options", profile["options"]
    for i, thread in enumerate(profile["threads"]):
        yield "thread", f"threads[{i}]", thread
    for i, frame in enumerate(profile["frames"]):
        yield "frame", f"frames[{i}]", frame
    for i, stack in enumerate(profile["stacks"]):
        yield "stack", f"stacks[{i}]", stack
    for i, process in enumerate(profile.get("processes") or []):
        yield "process", f"processes[{i}]", process
    for path, entry in profile["files"].items():
        yield "file", f"files[{path!r}]", entry
        for level, key in (("line", "lines"), ("function", "functions"), ("leak", "leaks")):
            for i, item in enumerate(entry.get(key) or []):
                yield level, f"files[{path!r}].{key}[{i}]", item


def mismatches(profile: dict[str, Any]) -> list[str]:
    memory = profile["memory_profiled"] is True
    found: list[str] = []
    for level, where, obj in objects(profile):
        allowed = set(fields.allowed(level, memory))
        unknown = sorted(set(obj) - allowed)
        missing = [key for key in fields.promised(level, memory) if key not in obj]
        if unknown:
            found.append(f"{where} has {unknown}, which fields.py does not describe at {level}")
        if missing:
            found.append(f"{where} lacks {missing}, which fields.py promises at {level}")
    return found


@pytest.mark.parametrize("children", [False, True], ids=["one process", "children"])
@pytest.mark.parametrize("mode", ["cpu-only", "memory"])
def test_the_writer_emits_exactly_the_described_fields(
    runner: Any, mode: str, children: bool
) -> None:
    options = ["--cpu-only"] if mode == "cpu-only" else []
    target = [PROGRAM, *(["children"] if children else [])]
    proc, profile = runner.spyglass(target, options=options)
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    levels = {level for level, _, _ in objects(profile)}
    # The run reached every level the description has for its kind (leaks need a leak).
    expected = {"run", "unattributed", "options", "thread", "frame", "stack", "process"}
    expected |= {"file", "line", "function"}
    assert expected <= levels, sorted(expected - levels)
    assert len(profile["threads"]) >= 2
    assert (len(profile["processes"]) >= 3) == children
    if mode == "memory":
        assert profile["mem_alloc_mb"] > 0 and profile["copy_mb"] > 0
    problems = mismatches(profile)
    assert not problems, "\n".join(problems[:20])


def test_a_key_the_description_lacks_is_caught() -> None:
    # The check above must be able to fail: a made-up figure at a line, a promised one gone.
    line = {"lineno": 1, "source": "", "samples": 0, "gpu_s": 0.0}
    line.update(dict.fromkeys(("cpu_python_s", "cpu_native_s", "cpu_system_s", "wait_s"), 0.0))
    entry = {"lines": [line], "functions": [], **{k: v for k, v in line.items() if k != "gpu_s"}}
    for key in ("lineno", "source"):
        del entry[key]
    profile = {"memory_profiled": False, "unattributed": {}, "options": {}, "threads": []}
    profile.update(frames=[], stacks=[], files={"/a.py": entry})
    problems = mismatches(profile)
    assert any("['gpu_s']" in p and ".lines[0]" in p for p in problems), problems
    assert any("lacks" in p and "'format'" in p for p in problems), problems


def test_a_profile_made_through_the_api_has_the_described_fields(runner: Any) -> None:
    # spyglass.profile() writes the C++ writer's document without the launcher's merge
    # (compact, as every profile file: load_profile fills in what it leaves out).
    outfile = runner.new_path("api")
    proc = runner.python([PROGRAM.parent / "api_with_block.py", outfile])
    assert proc.returncode == 0, proc.stderr
    profile = load_profile(outfile)
    assert profile["stacks"] and profile["files"]
    problems = mismatches(profile)
    assert not problems, "\n".join(problems[:20])


def test_the_programs_process_is_named_as_the_command_line_named_it(
    runner: Runner, tmp_path: Path
) -> None:
    """`-m json.tool`: the run's program and its own process's row say so (the row said
    "-m", what the process's argv[0] was while it started)."""
    data = tmp_path / "data.json"
    data.write_text('{"a": [1, 2]}', encoding="utf-8")
    proc, profile = runner.spyglass(["-m", "json.tool", data])
    assert profile is not None and proc.returncode == 0, proc.stderr
    assert profile["program"] == "-m json.tool"
    assert profile["processes"][0]["program"] == "-m json.tool", profile["processes"]
