"""The profile as the HTML page carries it (spyglass.reporters.page_data): packed without
loss, and small enough for a thread-per-request server's page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from profile_shapes import library_profile, server_profile, tower_profile
from spyglass.reporters.html import render_html
from spyglass.reporters.page_data import pack, unpack

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def size(doc: Any) -> int:
    return len(json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode())


@pytest.mark.parametrize("name", ["cpu_simple.json", "cpu_multifile.json", "mem_simple.json"])
def test_fixtures_unpack_to_themselves(name: str) -> None:
    profile = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    assert unpack(pack(profile)) == profile
    assert unpack(json.loads(json.dumps(pack(profile)))) == profile


def test_the_real_shapes_unpack_to_themselves_and_shrink() -> None:
    for profile in (server_profile(), tower_profile(), library_profile()):
        packed = pack(profile)
        assert unpack(packed) == profile
        print(f"\n{size(profile)} bytes of profile, {size(packed)} packed")
        assert size(packed) < size(profile)


def test_records_of_other_shapes_and_dollar_keys_survive() -> None:
    doc: dict[str, Any] = {
        "a": [{"x": 1, "y": "s"}, {"x": 2, "y": "s"}, {"y": "s", "x": 3}, {"x": 4}],
        "b": [{"$odd": 1}, {"$odd": 2}],
        "c": [[{"k": [1, 2]}, {"k": []}], 5, None],
        "d": [{"f": "same"}] * 5,
    }
    packed = pack(doc)
    assert "$table" in packed["a"] and "$table" not in json.dumps(packed["b"])
    assert packed["d"]["$strings"] == {"f": ["same"]}
    assert unpack(packed) == doc


def test_a_600_thread_server_page_is_under_300_kb() -> None:
    page = render_html(server_profile())
    print(f"\n600-thread server page: {len(page.encode())} bytes")
    assert len(page.encode()) < 300_000
