"""Native functions in the readers of a profile: validation, merging, diff, the terminal
report, collapsed stacks and speedscope (fixture: cpu_native.json, cpu_simple.json with
native functions on three lines, their stacks and the run's table)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from helpers import assert_valid_profile
from spyglass.profile_model import native_functions as nf
from spyglass.profile_model.diffing import diff_profiles
from spyglass.profile_model.io import check_profile
from spyglass.profile_model.merging import merge_profiles
from spyglass.reporters.collapsed import collapsed_lines
from spyglass.reporters.speedscope import to_speedscope

PATH = "/home/ada/demo/simple.py"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def read_fixture(name: str) -> dict[str, Any]:
    with open(FIXTURES / name, encoding="utf-8") as fh:
        doc: dict[str, Any] = json.load(fh)
    return doc


@pytest.fixture
def native() -> dict[str, Any]:
    return read_fixture("cpu_native.json")


def _line(profile: dict[str, Any], lineno: int) -> dict[str, Any]:
    found = [x for x in profile["files"][PATH]["lines"] if x["lineno"] == lineno]
    assert len(found) == 1
    return found[0]


def test_fixture_is_valid(native: dict[str, Any]) -> None:
    assert_valid_profile(native)
    assert check_profile(native) == []


@pytest.mark.parametrize(
    ("where", "bad"),
    [
        ("line", [{"name": "f", "library": "x.so", "cpu_s": -1, "samples": 1}]),
        ("line", [{"name": 3, "library": "x.so", "cpu_s": 1, "samples": 1}]),
        ("stack", {"name": "f"}),
        ("stack", [{"name": "f", "library": "", "cpu_s": 1, "samples": 1, "callers": [3]}]),
        ("run", [{"name": "f", "library": "", "cpu_s": 1, "samples": 1, "lines": [{}]}]),
    ],
)
def test_malformed_native_keys_are_reported(native: dict[str, Any], where: str, bad: Any) -> None:
    doc = copy.deepcopy(native)
    if where == "line":
        _line(doc, 9)["native_functions"] = bad
    elif where == "stack":
        doc["stacks"][0]["native"] = bad
    else:
        doc["native_functions"] = bad
    problems = check_profile(doc)
    assert any("native" in p for p in problems), problems


def test_merge_adds_up_per_name_and_library(native: dict[str, Any]) -> None:
    merged = merge_profiles([native, native])
    assert_valid_profile(merged)
    before = {(f["name"], f["library"]): f for f in native["native_functions"]}
    after = {(f["name"], f["library"]): f for f in merged["native_functions"]}
    assert after.keys() == before.keys()
    for key, f in before.items():
        assert after[key]["cpu_s"] == pytest.approx(2 * f["cpu_s"])
        assert after[key]["samples"] == 2 * f["samples"]
        assert after[key]["lines"][0]["cpu_s"] == pytest.approx(2 * f["lines"][0]["cpu_s"])
    for f, g in zip(_line(native, 9)["native_functions"], _line(merged, 9)["native_functions"]):
        assert (g["name"], g["cpu_s"]) == (f["name"], pytest.approx(2 * f["cpu_s"]))
    named = sum(sum(x["cpu_s"] for x in s.get("native", [])) for s in merged["stacks"])
    expected = sum(sum(x["cpu_s"] for x in s.get("native", [])) for s in native["stacks"])
    assert named == pytest.approx(2 * expected)


def test_merge_keeps_the_caps_and_the_sums(native: dict[str, Any]) -> None:
    many = copy.deepcopy(native)
    entries = [
        {"name": f"f{i}", "library": "x.so", "cpu_s": 0.001 * (i + 1), "samples": 1, "lines": []}
        for i in range(nf.MAX_IN_RUN + 20)
    ]
    many["native_functions"] = entries
    merged = merge_profiles([many, many])
    table = merged["native_functions"]
    assert len(table) == nf.MAX_IN_RUN + 1
    assert table[-1]["name"] == nf.OTHER
    assert sum(f["cpu_s"] for f in table) == pytest.approx(2 * sum(f["cpu_s"] for f in entries))


def test_merge_with_a_profile_without_native_keys(native: dict[str, Any]) -> None:
    plain = read_fixture("cpu_simple.json")
    merged = merge_profiles([native, plain])
    assert_valid_profile(merged)
    assert [f["cpu_s"] for f in merged["native_functions"]] == pytest.approx(
        [f["cpu_s"] for f in native["native_functions"]]
    )
    assert "native_functions" not in merge_profiles([plain, plain])


def test_diff_reads_profiles_with_native_keys(native: dict[str, Any]) -> None:
    diff_profiles(native, read_fixture("cpu_simple.json"))


def test_terminal_names_native_functions_under_the_line(
    native: dict[str, Any], render: Callable[..., str]
) -> None:
    for width in (80, 120):
        text = render(native, width=width)
        lines = text.splitlines()
        assert all(len(x) <= width for x in lines), width
        under = [i for i, x in enumerate(lines) if "native in libpython3.11:" in x]
        assert under, text
        # The row follows the sorted() line and names its heaviest function first.
        assert "sorted(map(str" in lines[under[0] - 1]
        assert "list_sort_impl 55%" in lines[under[0]]
        assert "Native functions" in text
        table = lines[lines.index(next(x for x in lines if x.startswith("Native functions"))) :]
        assert any("list_sort_impl" in x and "simple.py:9" in x for x in table), text


def test_terminal_without_native_keys_is_unchanged(render: Callable[..., str]) -> None:
    plain = read_fixture("cpu_simple.json")
    text = render(plain, width=100)
    assert "native in" not in text and "Native functions" not in text


def test_collapsed_puts_native_functions_below_the_python_frames(native: dict[str, Any]) -> None:
    plain = collapsed_lines(read_fixture("cpu_simple.json"))
    mixed = collapsed_lines(native)
    total = lambda lines: sum(int(x.rsplit(" ", 1)[1]) for x in lines)  # noqa: E731
    assert abs(total(mixed) - total(plain)) <= len(mixed), "the counts no longer add up"
    sort_lines = [x for x in mixed if x.split(" ")[-2].startswith("(libpython")]
    assert sort_lines, mixed
    assert any("simple.py:9);list_sort_impl (libpython3.11.so.1.0)" in x for x in mixed), mixed


def test_speedscope_adds_native_frames(native: dict[str, Any]) -> None:
    doc = to_speedscope(native)
    frames = doc["shared"]["frames"]
    names = [f["name"] for f in frames]
    assert "list_sort_impl" in names
    cpu = doc["profiles"][0]
    plain = to_speedscope(read_fixture("cpu_simple.json"))["profiles"][0]
    assert sum(cpu["weights"]) == pytest.approx(sum(plain["weights"]), abs=1e-6)
    at = names.index("list_sort_impl")
    assert any(s[-1] == at and len(s) > 1 for s in cpu["samples"])


LIBPY = "libpython3.11.so.1.0"


def _with_callers(native: dict[str, Any]) -> dict[str, Any]:
    """The fixture with list_sort_impl's stack entries called by builtin_sorted."""
    doc = copy.deepcopy(native)
    found = 0
    for stack in doc["stacks"]:
        for entry in stack.get("native", []):
            if entry["name"] == "list_sort_impl":
                entry["callers"] = [{"name": "builtin_sorted", "library": LIBPY}]
                found += 1
    assert found, "the fixture has no list_sort_impl stack entry"
    return doc


def test_callers_are_valid_and_drawn_between_python_and_the_function(
    native: dict[str, Any],
) -> None:
    doc = _with_callers(native)
    assert check_profile(doc) == []
    assert_valid_profile(doc)
    lines = collapsed_lines(doc)
    assert any(
        f"simple.py:9);builtin_sorted ({LIBPY});list_sort_impl ({LIBPY})" in x for x in lines
    ), lines
    speed = to_speedscope(doc)
    names = [f["name"] for f in speed["shared"]["frames"]]
    outer, inner = names.index("builtin_sorted"), names.index("list_sort_impl")
    assert any(s[-2:] == [outer, inner] for s in speed["profiles"][0]["samples"])


def test_merge_keeps_chains_apart_and_adds_up_equal_ones(native: dict[str, Any]) -> None:
    with_callers = _with_callers(native)
    merged = merge_profiles([with_callers, native])
    assert_valid_profile(merged)
    sort_entries = [
        e for s in merged["stacks"] for e in s.get("native", []) if e["name"] == "list_sort_impl"
    ]
    assert {len(e.get("callers", [])) for e in sort_entries} == {0, 1}, sort_entries
    twice = merge_profiles([with_callers, with_callers])
    doubled = [
        e for s in twice["stacks"] for e in s.get("native", []) if e["name"] == "list_sort_impl"
    ]
    once = [
        e
        for s in with_callers["stacks"]
        for e in s.get("native", [])
        if e["name"] == "list_sort_impl"
    ]
    assert sum(e["cpu_s"] for e in doubled) == pytest.approx(2 * sum(e["cpu_s"] for e in once))
    assert all(e["callers"] == [{"name": "builtin_sorted", "library": LIBPY}] for e in doubled)


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("list_sort_impl", "list_sort_impl"),
        ("ns::Burner::burn(double)", "ns::Burner::burn"),
        (
            "void pocketfft::detail::cfftp<double>::pass_all<true>(unsigned long) const",
            "pocketfft::detail::cfftp<…>::pass_all<…>",
        ),
        ("(anonymous namespace)::spin(double, unsigned long*)", "(anonymous namespace)::spin"),
        (
            "std::vector<int>::operator[](unsigned long)",
            "std::vector<int>::operator[](unsigned long)",
        ),
        ("libz.so.1+0x4970", "libz.so.1+0x4970"),
        ("unsigned long part<v<double>, 8>(double*) [clone .constprop.0]", "part<…>"),
    ],
)
def test_short_names_drop_templates_parameters_and_return_types(name: str, short: str) -> None:
    assert nf.short_name(name) == short


def test_stack_parts_never_exceed_the_stack() -> None:
    stack = {"native": [{"name": "f", "library": "a", "cpu_s": 5.0, "samples": 3}]}
    parts = nf.stack_parts(stack, "cpu", 2.0)
    assert sum(v for _, v in parts) == pytest.approx(2.0)
    assert nf.stack_parts(stack, "wait", 1.0) == [(None, 1.0)]
    assert nf.short_library("_zlib.cpython-311-x86_64-linux-gnu.so") == "_zlib"
    assert nf.short_library("libpython3.11.so.1.0") == "libpython3.11"


def test_call_tree_hangs_native_chains_below_the_innermost_frame(native: dict[str, Any]) -> None:
    from spyglass.reporters.call_tree import Node, build_tree

    root = build_tree(_with_callers(native))

    def find(node: Node, name: str) -> Node | None:
        if node.function == name:
            return node
        for child in node.children.values():
            hit = find(child, name)
            if hit is not None:
                return hit
        return None

    outer = find(root, "builtin_sorted")
    assert outer is not None and outer.file == LIBPY
    inner = [c for c in outer.children.values() if c.function == "list_sort_impl"]
    assert inner and inner[0].cpu_s == pytest.approx(outer.cpu_s)
    assert inner[0].times["cpu_python_s"] == 0.0
