"""plain_json writes what json.dumps writes, for the values a profiled process serialises
before and after its program (its metadata), without importing json."""

from __future__ import annotations

import json

import pytest

from spyglass.runtime.plain_json import dumps

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
