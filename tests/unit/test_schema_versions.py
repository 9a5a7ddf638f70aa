"""Schema versions 2 and 3: the memory keys (2), in the JSON Schema and in the plain-Python
reader; the figures of thread and stack rows left out when 0 (3), by the writer and filled
in by the reader; the upgrade of version 1 and 2 documents; and the consistency rules of
memory profiles."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import jsonschema
import pytest

from spyglass import schema
from spyglass.profile_model import fields
from spyglass.profile_model import memory_figures as memory
from spyglass.profile_model.io import (
    ProfileError,
    check_consistency,
    check_profile,
    load_profile,
    upgrade,
    validate,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GOOD = ("cpu_simple.json", "cpu_multifile.json", "hostile.json", "mem_simple.json")
BAD = ("foreign.json", "future_version.json")
DEMO = "/home/ada/memdemo/mem_demo.py"

Mutation = Callable[[dict[str, Any]], None]


def read(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return doc


def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema.load_schema())


def _line(doc: dict[str, Any], lineno: int, kind: str = "lines") -> dict[str, Any]:
    key = "lineno" if kind == "lines" else "first_lineno"
    return next(x for x in doc["files"][DEMO][kind] if x[key] == lineno)


def test_the_schema_file_is_version_3() -> None:
    assert schema.SCHEMA_VERSION == 3 and schema.MIN_SCHEMA_VERSION == 1
    assert schema.SCHEMA_FILENAME == "profile-v3.schema.json"
    for old in ("profile-v1.schema.json", "profile-v2.schema.json"):
        assert not (schema.schema_path().parent / old).exists()
    loaded = schema.load_schema()
    assert "memory_profiled" in loaded["required"]
    assert loaded["if"]["properties"]["memory_profiled"] == {"const": True}


@pytest.mark.parametrize("name", GOOD)
def test_good_fixtures_are_valid_and_consistent(name: str) -> None:
    doc = read(name)
    assert [e.message for e in _validator().iter_errors(doc)] == []
    assert check_profile(doc) == []
    profile = load_profile(FIXTURES / name)
    assert profile["schema_version"] == 3
    assert check_consistency(profile) == []


@pytest.mark.parametrize("name", BAD)
def test_bad_fixtures_are_refused(name: str) -> None:
    doc = read(name)
    assert not _validator().is_valid(doc)
    assert check_profile(doc) != []
    with pytest.raises(ProfileError):
        load_profile(FIXTURES / name)


def test_only_mem_simple_is_memory_profiled() -> None:
    flags = {name: read(name)["memory_profiled"] for name in GOOD}
    assert flags == {name: name == "mem_simple.json" for name in GOOD}
    profile = load_profile(FIXTURES / "mem_simple.json")
    assert memory.is_profiled(profile)
    assert profile["max_footprint_mb"] == 318.0
    assert (profile["max_footprint_file"], profile["max_footprint_lineno"]) == (DEMO, 17)
    assert profile["files"][DEMO]["leaks"][0]["lineno"] == 13


# --------------------------------------------------------------------------- required keys


def _required_paths() -> list[tuple[str, Mutation]]:
    """Every memory key of mem_simple.json, each with a mutation that deletes it."""
    out: list[tuple[str, Mutation]] = []
    for key in memory.TOP_KEYS:
        out.append((key, lambda d, k=key: d.pop(k)))
    # (Not those of threads and stacks, which leave out what is 0: see the zeros below.)
    for key in (*memory.SPLIT_KEYS, "leaks"):
        out.append((f"file.{key}", lambda d, k=key: d["files"][DEMO].pop(k)))
    for key in memory.LINE_KEYS:
        out.append((f"line.{key}", lambda d, k=key: _line(d, 17).pop(k)))
        out.append((f"function.{key}", lambda d, k=key: _line(d, 15, "functions").pop(k)))
    return out


REQUIRED = _required_paths()


@pytest.mark.parametrize(("where", "mutate"), REQUIRED, ids=[w for w, _ in REQUIRED])
def test_memory_keys_are_required_when_memory_profiled(
    mem: dict[str, Any], where: str, mutate: Mutation
) -> None:
    mutate(mem)
    assert not _validator().is_valid(mem), f"schema accepted a profile without {where}"
    problems = check_profile(mem)
    assert problems and "missing key" in problems[0], problems


def test_memory_profiled_itself_is_required(simple: dict[str, Any]) -> None:
    del simple["memory_profiled"]
    assert not _validator().is_valid(simple)
    assert check_profile(simple) == ["missing key 'memory_profiled'"]


def test_memory_keys_may_be_absent_when_not_profiled(mem: dict[str, Any]) -> None:
    mem["memory_profiled"] = False
    for key in memory.TOP_KEYS:
        del mem[key]
    for item in [*mem["threads"], *mem["stacks"]]:
        for key in memory.SPLIT_KEYS:
            del item[key]
    for entry in mem["files"].values():
        for key in (*memory.SPLIT_KEYS, "leaks"):
            del entry[key]
        for item in [*entry["lines"], *entry["functions"]]:
            for key in memory.LINE_KEYS:
                del item[key]
    assert _validator().is_valid(mem)
    assert check_profile(mem) == []


def test_processes_carry_memory_keys_in_a_memory_profile(mem: dict[str, Any]) -> None:
    mem["processes"] = [{"pid": 1, "max_footprint_mb": 3.0, "mem_alloc_mb": 4.0, "copy_mb": 0.0}]
    assert _validator().is_valid(mem) and check_profile(mem) == []
    del mem["processes"][0]["copy_mb"]
    assert not _validator().is_valid(mem)
    assert check_profile(mem) == ["missing key 'copy_mb' in processes[0]"]


def _set(value: Any, where: Callable[[dict[str, Any]], dict[str, Any]], key: str) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        where(doc)[key] = value

    return mutate


def _top(d: dict[str, Any]) -> dict[str, Any]:
    return d


def _l17(d: dict[str, Any]) -> dict[str, Any]:
    return _line(d, 17)


def _leak(d: dict[str, Any]) -> dict[str, Any]:
    leak: dict[str, Any] = d["files"][DEMO]["leaks"][0]
    return leak


MUTATIONS: dict[str, Mutation] = {
    "memory_profiled as string": _set("yes", _top, "memory_profiled"),
    "window zero": _set(0, _top, "memory_window_mb"),
    "fraction above 1": _set(1.5, _top, "mem_python_fraction"),
    "negative allocation": _set(-1.0, _top, "mem_alloc_mb"),
    "samples as float": _set(9.5, _top, "mem_samples"),
    "lineno as string": _set("17", _top, "max_footprint_lineno"),
    "file as number": _set(3, _top, "max_footprint_file"),
    "timeline not pairs": _set([[0.0, 1.0, 2.0]], _top, "footprint_timeline"),
    "timeline negative time": _set([[-1.0, 1.0]], _top, "footprint_timeline"),
    "timeline too long": _set([[i / 10, 1.0] for i in range(201)], _top, "footprint_timeline"),
    "line timeline too long": _set([[i / 10, 1.0] for i in range(101)], _l17, "mem_timeline"),
    "line share above 1": _set(1.01, _l17, "mem_share"),
    "line copy negative": _set(-2.0, _l17, "copy_mb"),
    "leak likelihood above 1": _set(2.0, _leak, "likelihood"),
    "leak rate as string": _set("fast", _leak, "rate_mb_s"),
    "leaks as object": lambda d: d["files"][DEMO].__setitem__("leaks", {}),
    "processes as object": lambda d: d.__setitem__("processes", {"pid": 1}),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_schema_and_plain_check_both_refuse(name: str, mem: dict[str, Any]) -> None:
    doc = copy.deepcopy(mem)
    MUTATIONS[name](doc)
    assert json.dumps(doc) != json.dumps(mem)
    assert not _validator().is_valid(doc), f"schema accepted: {name}"
    assert check_profile(doc), f"check_profile accepted: {name}"


# --------------------------------------------------------------------------- versions


def _as_version_1(profile: dict[str, Any]) -> dict[str, Any]:
    old = copy.deepcopy(profile)
    old["schema_version"] = 1
    del old["memory_profiled"]
    return old


def test_version_1_is_read_as_version_3_without_memory(simple: dict[str, Any]) -> None:
    old = _as_version_1(simple)
    kept = copy.deepcopy(old)
    profile = validate(old, "old.json")
    assert old == kept, "the document read was changed"
    assert profile["schema_version"] == 3 and profile["memory_profiled"] is False
    assert profile == simple
    assert upgrade(simple) is simple


def test_a_version_1_file_loads_and_shows_like_version_3(
    tmp_path: Path, simple: dict[str, Any], render: Callable[..., str]
) -> None:
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(_as_version_1(simple)), encoding="utf-8")
    profile = load_profile(path)
    assert profile == simple
    assert render(profile) == render(simple)


def test_version_1_must_still_be_well_formed(simple: dict[str, Any]) -> None:
    old = _as_version_1(simple)
    del old["elapsed_s"]
    with pytest.raises(ProfileError, match=r"^v1\.json is not a valid spyglass profile: missing"):
        validate(old, "v1.json")


@pytest.mark.parametrize("version", [4, 5, 99])
def test_newer_versions_get_the_one_line_error(simple: dict[str, Any], version: int) -> None:
    simple["schema_version"] = version
    with pytest.raises(ProfileError) as info:
        validate(simple, "new.json")
    assert str(info.value) == (
        f"new.json was written with schema version {version}; this spyglass reads versions "
        "1 to 3; upgrade spyglass"
    )


def test_the_future_fixture_is_version_4() -> None:
    assert read("future_version.json")["schema_version"] == 4


def test_version_2_is_read_as_it_is(simple: dict[str, Any]) -> None:
    old = copy.deepcopy(simple)
    old["schema_version"] = 2
    kept = copy.deepcopy(old)
    profile = validate(old, "v2.json")
    assert old == kept, "the document read was changed"
    assert profile == simple


# --------------------------------------------------------------------------- zeros


def _without_zeros(doc: dict[str, Any]) -> dict[str, Any]:
    from spyglass.runtime.output import profile_text

    out: dict[str, Any] = json.loads(profile_text(doc))
    return out


@pytest.mark.parametrize("name", GOOD)
def test_thread_and_stack_rows_are_written_without_their_zeros(name: str) -> None:
    doc = read(name)
    written = _without_zeros(doc)
    rows = [(r, "thread") for r in written["threads"]] + [(r, "stack") for r in written["stacks"]]
    left_out = 0
    for row, level in rows:
        for key in fields.zero_omitted(level):
            assert row.get(key, 1) != 0, f"{level} row keeps {key}: 0"
        left_out += sum(1 for key in fields.zero_omitted(level) if key not in row)
    assert left_out > 0, "no zero to leave out: the fixture tests nothing"
    assert [e.message for e in _validator().iter_errors(written)] == []
    assert check_profile(written) == []
    # Read back, it is the document that was written; the document itself is untouched.
    assert validate(copy.deepcopy(written), name) == doc
    assert read(name) == doc


def test_zero_figures_are_left_out_and_only_they(tmp_path: Path) -> None:
    doc = read("mem_simple.json")
    stack = doc["stacks"][0]
    stack.update(cpu_native_s=0, wait_s=0.0, copy_mb=0, samples=3)
    row = _without_zeros(doc)["stacks"][0]
    assert "cpu_native_s" not in row and "wait_s" not in row and "copy_mb" not in row
    assert row["samples"] == 3 and row["frames"] == stack["frames"]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_without_zeros(doc)), encoding="utf-8")
    loaded = load_profile(path)["stacks"][0]
    assert loaded["cpu_native_s"] == 0 and loaded["wait_s"] == 0 and loaded["copy_mb"] == 0


def test_a_cpu_profile_gets_back_no_memory_figure() -> None:
    doc = read("cpu_simple.json")
    back = validate(_without_zeros(doc), "cpu.json")
    assert all("mem_alloc_mb" not in r for r in back["threads"] + back["stacks"])
    assert back == doc


def test_a_row_missing_a_figure_that_is_not_a_zero_one_is_still_refused() -> None:
    doc = _without_zeros(read("cpu_simple.json"))
    del doc["stacks"][0]["frames"]
    del doc["threads"][0]["tid"]
    problems = check_profile(doc)
    assert "missing key 'frames' in stacks[0]" in problems
    assert "missing key 'tid' in threads[0]" in problems


# --------------------------------------------------------------------------- consistency


CONSISTENCY: dict[str, tuple[Mutation, str]] = {
    "file alloc": (
        lambda d: d["files"][DEMO].__setitem__("mem_alloc_mb", 1.0),
        "mem_alloc_mb is 1.0 but its lines add up",
    ),
    "file copies": (
        lambda d: d["files"][DEMO].__setitem__("copy_mb", 0.0),
        "copy_mb is 0.0 but its lines add up",
    ),
    "run below its files": (
        lambda d: d.__setitem__("mem_alloc_mb", 100.0),
        "more than the run's mem_alloc_mb",
    ),
    "share": (lambda d: _line(d, 17).__setitem__("mem_share", 0.5), "mem_share is 0.5"),
    "copy rate": (lambda d: d.__setitem__("copy_mb_s", 1.0), "copy_mb_s is 1.0"),
    "footprint order": (
        lambda d: d["footprint_timeline"].reverse(),
        "footprint_timeline is not in increasing time order",
    ),
    "line timeline order": (
        lambda d: _line(d, 13)["mem_timeline"].reverse(),
        "mem_timeline is not in increasing time order",
    ),
    "leak order": (
        lambda d: d["files"][DEMO]["leaks"].append(
            {"lineno": 8, "likelihood": 1.0, "rate_mb_s": 1}
        ),
        "leaks are not sorted",
    ),
    "leak of no line": (
        lambda d: _leak(d).__setitem__("lineno", 99),
        "leaks name a line that is not in its lines",
    ),
}


@pytest.mark.parametrize("name", sorted(CONSISTENCY))
def test_consistency_rules_of_memory(name: str, mem: dict[str, Any]) -> None:
    mutate, expected = CONSISTENCY[name]
    mutate(mem)
    assert check_profile(mem) == []
    problems = check_consistency(mem)
    assert any(expected in p for p in problems), problems


# --------------------------------------------------------------------------- frame files


def test_frames_name_their_files_by_index_in_frame_files() -> None:
    doc = read("cpu_multifile.json")
    written = _without_zeros(doc)
    files = written["frame_files"]
    assert sorted(files) == sorted({f["file"] for f in doc["frames"]})  # each file once
    assert [files[f["file"]] for f in written["frames"]] == [f["file"] for f in doc["frames"]]
    assert [e.message for e in _validator().iter_errors(written)] == []
    assert check_profile(written) == []
    back = validate(copy.deepcopy(written), "p.json")
    assert "frame_files" not in back and back == doc


def test_a_frame_file_index_that_names_no_file_is_refused() -> None:
    written = _without_zeros(read("cpu_simple.json"))
    written["frames"][1]["file"] = len(written["frame_files"])
    with pytest.raises(ProfileError, match=r"frames\[1\]\.file is \d+, which names no file"):
        validate(written, "p.json")


@pytest.mark.parametrize("index", [-1, True, 0.0], ids=["negative", "bool", "float"])
def test_a_frame_file_that_is_no_index_is_not_looked_up(index: object) -> None:
    written = _without_zeros(read("cpu_simple.json"))
    written["frames"][1]["file"] = index
    with pytest.raises(ProfileError, match=r"frames\[1\]\.file"):
        validate(written, "p.json")
