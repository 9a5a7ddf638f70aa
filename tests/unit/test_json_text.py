"""json_text reads and writes what json reads and writes, without importing json: the
values a profiled process serialises (its metadata), the profiles the supervisor merges
and writes, and texts that are not JSON at all."""

from __future__ import annotations

import json

import pytest

from spyglass import json_text
from spyglass.json_text import dumps, loads

VALUES = [
    None,
    True,
    0,
    -7,
    2**70,
    0.1,
    -0.0,
    1e300,
    float("inf"),
    float("-inf"),
    "",
    "plain",
    'quote " backslash \\ tab \t newline \n nul \0',
    "é ünïcode ☃ 𝄞",
    "lone surrogate \udcff",
    [],
    (1, "two", None),
    {},
    {"argv": ["app.py", "--x"], "options": {"interval_s": 0.01, "paths": []}, "n": None},
    [{"a": [1, [2, [3, {"b": False}]]]}],
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_same_text_as_json(value: object) -> None:
    assert dumps(value) == json.dumps(value)
    assert dumps(value, compact=True) == json.dumps(value, separators=(",", ":"))


def test_nan_as_json_writes_it() -> None:
    assert dumps(float("nan")) == json.dumps(float("nan")) == "NaN"


@pytest.mark.parametrize(
    "value",
    [{1: "a"}, {"k": {2.5: 1}}, {"s": {1, 2}}, object()],
    ids=["int key", "float key", "set", "object"],  # the same in every xdist worker
)
def test_other_values_are_json_dumps_own(value: object) -> None:
    try:
        expected = json.dumps(value)
    except TypeError:
        with pytest.raises(TypeError):
            dumps(value)
        return
    assert dumps(value) == expected


def test_circular_values_are_refused_as_json_refuses_them() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        dumps(loop)


TEXTS = [
    '{"a": [1, 2.5, -3e400, "x\\u00e9\\n", null, true, false, {"b": {}}]}',
    " \n[1, NaN, Infinity, -Infinity]\t\r\n",
    "12345678901234567890123",
    '"\\ud83d\\ude00 \\udcff"',
    "[]",
]


@pytest.mark.parametrize("text", TEXTS)
def test_reads_what_json_reads(text: str) -> None:
    assert repr(loads(text)) == repr(json.loads(text))
    assert repr(loads(text, parse_int=float)) == repr(json.loads(text, parse_int=float))


@pytest.mark.parametrize(
    "text", ["", "  ", "[1,]", '{"a": 1} x', "\ufeff[1]", "[1", "nan", '{"a" 1}', "[1] [2]"]
)
def test_what_is_not_json_fails_with_jsons_own_error(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as ours:
        loads(text)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(text)
    assert (ours.value.msg, ours.value.pos) == (theirs.value.msg, theirs.value.pos)


def test_leading_members_reads_up_to_the_member_named() -> None:
    text = ' { "a" : [1, {"threads": 2}], "s": "x\\"}, \\"threads\\": [", "n": null '
    text += ',"threads": [oops'
    values, spans, stop = json_text.leading_members(text, "threads")
    assert values == {"a": [1, {"threads": 2}], "s": 'x"}, "threads": [', "n": None}
    assert {k: text[a:b] for k, (a, b) in spans.items()} == {
        "a": '[1, {"threads": 2}]',
        "s": '"x\\"}, \\"threads\\": ["',
        "n": "null",
    }
    assert text[stop:].startswith('"threads"')
    # What is read must be JSON; the rest is never looked at.
    assert json_text.leading_members('{"threads":}', "threads") == ({}, {}, 1)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '"threads"',
        '{"a":1}',
        '{"a":1,}',
        '{"a" 1,"threads":1}',
        '{"a":x,"threads":1}',
        '{"a":1 "threads":2}',
        '{"a":"\\q","threads":1}',
        "{}",
    ],
)
def test_leading_members_refuses_what_does_not_reach_the_member(text: str) -> None:
    with pytest.raises(ValueError):
        json_text.leading_members(text, "threads")


def test_members_before_last_leaves_the_named_member_and_what_follows_unread() -> None:
    # A quote inside a string is escaped, so the name inside it is not taken for the member.
    text = '{"a": 1, "b": {"c": "x\\"frame_files\\": y"}, "frame_files": ["f"], "frames": [1'
    assert json_text.members_before_last(text, "frame_files") == {
        "a": 1,
        "b": {"c": 'x"frame_files": y'},
    }


@pytest.mark.parametrize(
    "text", ['{"a": 1}', '{"frame_files": [], "a": 1}', '{"a": "frame_files"}']
)
def test_members_before_last_is_none_without_members_before_the_named_one(text: str) -> None:
    assert json_text.members_before_last(text, "frame_files") is None


def test_members_before_last_refuses_a_damaged_head() -> None:
    with pytest.raises(ValueError):
        json_text.members_before_last('{"a": [1, , "frame_files": []}', "frame_files")
