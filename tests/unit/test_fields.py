"""The one description of the profile's fields (spyglass/profile_model/fields.py) and what
is derived from it: the committed JSON Schema and the tables of docs/profile-format.md are
what the table makes, the reader's and merge's key lists come from it, and merging combines
each figure as its rule says."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from spyglass.profile_model import (
    diffing,
    fields,
    fields_docs,
    io,
    kinds,
    memory_figures,
    merging,
)
from spyglass.profile_model.schema_build import build_schema, schema_text

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"


def test_the_committed_schema_is_the_generated_one() -> None:
    committed = (REPO / "src" / "spyglass" / "schema" / "profile-v3.schema.json").read_text(
        encoding="utf-8"
    )
    assert committed == schema_text(), (
        "the schema file is out of step with fields.py: "
        "run python -m spyglass.profile_model.schema_build"
    )


def test_the_docs_tables_are_the_generated_ones() -> None:
    text = (REPO / "docs" / "profile-format.md").read_text(encoding="utf-8")
    assert fields_docs.BEGIN in text and fields_docs.END in text
    assert fields_docs.updated_docs(text) == text, (
        "docs/profile-format.md is out of step with fields.py: "
        "run python -m spyglass.profile_model.schema_build"
    )


def test_every_field_is_well_formed() -> None:
    seen: set[tuple[str, str]] = set()
    for f in fields.FIELDS:
        assert f.levels and set(f.levels) <= set(fields.LEVELS), f
        assert f.presence in fields.PRESENCES, f
        assert f.merge in fields.MERGE_RULES, f
        assert f.diff in fields.DIFF_RULES, f
        assert f.unit in ("s", "MB", "MB/s", "%", ""), f
        assert f.description, f
        kinds.kind(f.kind)  # a kind the reader and the schema know
        for level in f.levels:
            assert (f.name, level) not in seen, f"{f.name} is described twice at {level}"
            seen.add((f.name, level))


def test_every_level_has_a_schema_definition_with_its_fields() -> None:
    schema = build_schema()
    for level in fields.LEVELS:
        node = schema if level == "run" else schema["$defs"][level]
        assert set(node["properties"]) == {f.name for f in fields.at(level)}, level
        zeros = fields.zero_omitted(level)  # left out of a row when 0 (thread, stack)
        required = {f.name for f in fields.at(level) if f.presence == "required"} - set(zeros)
        assert set(node["required"]) == required, level
    assert set(fields.zero_omitted("stack")) >= {"cpu_python_s", "samples", "mem_alloc_mb"}
    assert fields.zero_omitted("line") == ()


def test_the_key_lists_come_from_the_table() -> None:
    assert io.TIME_KEYS == ("cpu_python_s", "cpu_native_s", "cpu_system_s", "wait_s")
    assert io.PART_KEYS == ("cpu_gc_s", "await_s")
    assert set(memory_figures.SPLIT_KEYS) == {"mem_alloc_mb", "copy_mb"}
    assert set(memory_figures.PROCESS_KEYS) == {"max_footprint_mb", "mem_alloc_mb", "copy_mb"}
    assert "mem_peak_mb" in memory_figures.LINE_KEYS
    assert "mem_peak_mb" not in memory_figures.TOP_KEYS
    assert set(memory_figures.LIVE_KEYS) == {
        "mem_freed_mb",
        "mem_live_end_mb",
        "mem_live_at_peak_mb",
    }


def _fixture(name: str) -> dict[str, Any]:
    return io.validate(json.loads((FIXTURES / name).read_text(encoding="utf-8")))


def _numbers(level: str, rule: str) -> list[str]:
    return [
        f.name
        for f in fields.at(level)
        if f.merge == rule and f.kind in ("seconds", "count", "mb", "window", "positive", "time")
    ]


@pytest.mark.parametrize("name", ["cpu_simple.json", "mem_simple.json"])
def test_merging_combines_each_top_level_figure_by_its_rule(name: str) -> None:
    one = _fixture(name)
    two = copy.deepcopy(one)
    two["started_at"] = float(one["started_at"]) + 1000.0  # one after the other
    two["interval_s"] = float(one["interval_s"]) / 2
    two["dropped_samples"] = 3
    one["dropped_samples"] = 4
    if memory_figures.is_profiled(two):
        two["memory_window_mb"] = float(one["memory_window_mb"]) * 2
        two["max_footprint_mb"] = float(one["max_footprint_mb"]) + 1.0
        two["dropped_memory_samples"] = 5
    merged = merging.merge_profiles([one, two])
    checked = 0
    for key in _numbers("run", "sum"):
        if key in one or key in two:
            assert merged[key] == pytest.approx(float(one.get(key, 0)) + float(two.get(key, 0)))
            checked += 1
    for key, pick in (("min", min), ("max", max)):
        for name_ in _numbers("run", key):
            if name_ in one:
                assert merged[name_] == pytest.approx(pick(float(one[name_]), float(two[name_])))
                checked += 1
    assert checked >= 8


def test_merging_adds_up_a_figure_the_table_sums() -> None:
    # A figure of newer profiles that adds up (as the next engine's would): merging sums it
    # without knowing its name, because the table says it sums.
    one = _fixture("cpu_simple.json")
    two = copy.deepcopy(one)
    for profile, part in ((one, 0.25), (two, 0.5)):
        profile["cpu_gc_s"] = part
        profile["files"] = {}
        profile["unattributed"] = {**profile["unattributed"], "cpu_gc_s": part}
    merged = merging.merge_profiles([one, two])
    assert merged["cpu_gc_s"] == pytest.approx(0.75)
    assert merged["unattributed"]["cpu_gc_s"] == pytest.approx(0.75)


def test_diffing_shows_the_figures_the_table_says_to_show(monkeypatch: pytest.MonkeyPatch) -> None:
    # A figure the table marks "shown" travels in each change without diffing naming it.
    before = _fixture("cpu_simple.json")
    after = copy.deepcopy(before)
    before["cpu_gc_s"], after["cpu_gc_s"] = 0.25, 0.75
    assert not diffing.diff_profiles(before, after).total.others  # cpu_gc_s is not shown
    monkeypatch.setattr(diffing, "_SHOWN", ("cpu_gc_s",))
    total = diffing.diff_profiles(before, after).total
    assert total.others == (("cpu_gc_s", 0.25, 0.75),)
    assert total.as_json()["others"] == {"cpu_gc_s": {"before": 0.25, "after": 0.75, "delta": 0.5}}
