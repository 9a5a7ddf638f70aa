"""The JSON Schema and the plain-Python structural check agree on what a profile is."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import jsonschema
import pytest

from spyglass import schema
from spyglass.profile_model.io import check_profile

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GOOD = ("cpu_simple.json", "cpu_multifile.json")


def read_fixture(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return doc


Mutation = Callable[[dict[str, Any]], None]

SIMPLE_PATH = "/home/ada/demo/simple.py"


def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema.load_schema())


def _file(doc: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = doc["files"][SIMPLE_PATH]
    return entry


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    loaded = schema.load_schema()
    jsonschema.Draft202012Validator.check_schema(loaded)
    assert loaded["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_schema_ships_inside_the_package_and_matches_load_schema() -> None:
    path = schema.schema_path()
    assert path.is_file()
    # Inside the imported package (installed or in-tree alike), identical to the source.
    assert path.parent == Path(schema.__file__).resolve().parent
    source = FIXTURES.parent.parent / "src" / "spyglass" / "schema" / path.name
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(
        source.read_text(encoding="utf-8")
    )
    assert json.loads(path.read_text(encoding="utf-8")) == schema.load_schema()


def test_schema_pins_the_version_and_format_constants() -> None:
    props = schema.load_schema()["properties"]
    assert props["schema_version"] == {"const": schema.SCHEMA_VERSION}
    assert props["format"] == {"const": schema.PROFILE_FORMAT}
    assert schema.SCHEMA_VERSION == 3


@pytest.mark.parametrize("name", GOOD)
def test_good_fixtures_validate(name: str) -> None:
    doc = read_fixture(name)
    errors = [e.message for e in _validator().iter_errors(doc)]
    assert errors == []
    assert check_profile(doc) == []


@pytest.mark.parametrize("name", ["foreign.json", "future_version.json"])
def test_bad_fixtures_are_rejected(name: str) -> None:
    doc = read_fixture(name)
    assert not _validator().is_valid(doc)
    assert check_profile(doc) != []


def test_not_json_fixture_is_not_json() -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads((FIXTURES / "not_json.json").read_text(encoding="utf-8"))


def test_unknown_top_level_keys_and_options_are_allowed(simple: dict[str, Any]) -> None:
    simple["processes"] = [{"pid": 1}]
    simple["dropped_samples"] = 0
    simple["options"]["pseudo_files"] = ["<string>"]
    simple["options"]["functions"] = [["/home/ada/demo/simple.py", 5]]
    assert _validator().is_valid(simple)
    assert check_profile(simple) == []


def test_unknown_keys_in_other_nested_objects_are_refused(simple: dict[str, Any]) -> None:
    simple["threads"][0]["cpu_gpu_s"] = 0.5
    assert not _validator().is_valid(simple)


def _delete(*keys: str) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        target: Any = doc
        for key in keys[:-1]:
            target = target[key]
        target.pop(keys[-1], None)

    return mutate


def _set(value: Any, *keys: str) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        target: Any = doc
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return mutate


def _set_line(key: str, value: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        _file(doc)["lines"][1][key] = value

    return mutate


def _set_function(key: str, value: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        _file(doc)["functions"][0][key] = value

    return mutate


def _drop_line_key(key: str) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        del _file(doc)["lines"][0][key]

    return mutate


def _set_thread(key: str, value: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        doc["threads"][0][key] = value

    return mutate


MUTATIONS: dict[str, Mutation] = {
    "no format": _delete("format"),
    "other format": _set("speedscope", "format"),
    "version 1": _set(1, "schema_version"),
    "version 4": _set(4, "schema_version"),
    "version as string": _set("1", "schema_version"),
    "version as bool": _set(True, "schema_version"),
    "no elapsed_s": _delete("elapsed_s"),
    "no files": _delete("files"),
    "no stacks": _delete("stacks"),
    "no options": _delete("options"),
    "negative cpu": _set(-0.5, "cpu_python_s"),
    "samples as float": _set(340.5, "samples"),
    "samples as bool": _set(True, "samples"),
    "argv not strings": _set(["simple.py", 3], "argv"),
    "exit_status as string": _set("0", "exit_status"),
    "interval zero": _set(0, "interval_s"),
    "files as list": _set([], "files"),
    "unattributed missing wait": _delete("unattributed", "wait_s"),
    "line without samples": _drop_line_key("samples"),
    "line without source": _drop_line_key("source"),
    "lineno as string": _set_line("lineno", "8"),
    "source as null": _set_line("source", None),
    "function first_lineno float": _set_function("first_lineno", 5.5),
    "function without name": _set_function("name", 5),
    "thread tid as string": _set_thread("tid", "48211"),
    "thread name as number": _set_thread("name", 7),
    "frame lineno missing": lambda d: d["frames"][0].pop("lineno"),
    "stack frames not ints": lambda d: d["stacks"][0].__setitem__("frames", ["0"]),
    "profile_all as string": _set("yes", "options", "profile_all"),
    "profile_only as string": _set("src", "options", "profile_only"),
    "program_path as string": _set("/home/ada", "options", "program_path"),
    "functions as bool": _set(True, "options", "functions"),
    "functions pair reversed": _set([[5, "/a.py"]], "options", "functions"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_schema_and_plain_check_both_reject(name: str, simple: dict[str, Any]) -> None:
    doc = copy.deepcopy(simple)
    MUTATIONS[name](doc)
    assert json.dumps(doc) != json.dumps(simple), "the mutation changed nothing"
    assert not _validator().is_valid(doc), f"schema accepted: {name}"
    assert check_profile(doc), f"check_profile accepted: {name}"
