"""The kinds of value a profile field holds (fields.Field.kind): for each, the reader's
check, the words its messages use, and the JSON Schema it becomes. Containers
("list:thread", "map:file", "object:options") name the level their items are."""

from __future__ import annotations

from spyglass._constants import (
    LINE_TIMELINE_POINTS,
    LINE_TIMELINE_POINTS_WRITTEN,
    RUN_TIMELINE_POINTS,
)
from spyglass.schema import PROFILE_FORMAT, SCHEMA_VERSION

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: The most points a footprint_timeline / a line's mem_timeline may have (the format's
#: bounds, mirrored from the extension so that reading a profile does not load it), and
#: the most a line's is given when written (merged).
FOOTPRINT_POINTS: int = RUN_TIMELINE_POINTS
LINE_POINTS: int = LINE_TIMELINE_POINTS
LINE_POINTS_WRITTEN: int = LINE_TIMELINE_POINTS_WRITTEN
#: The most entries a stack's frames may have: its innermost frames and the truncation mark.
STACK_FRAMES = 129


def is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_seconds(v: object) -> bool:
    return is_number(v) and v >= 0  # type: ignore[operator]


def is_count(v: object) -> bool:
    return is_int(v) and v >= 0  # type: ignore[operator]


def _is_str_list(v: object) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _is_fraction(v: object) -> bool:
    return is_number(v) and 0 <= v <= 1  # type: ignore[operator]


def _is_timeline(cap: int) -> Callable[[object], bool]:
    def check(v: object) -> bool:
        return (
            isinstance(v, list)
            and len(v) <= cap
            and all(
                isinstance(p, list) and len(p) == 2 and is_seconds(p[0]) and is_number(p[1])
                for p in v
            )
        )

    return check


def _is_pair_list(v: object) -> bool:
    return isinstance(v, list) and all(
        isinstance(x, list) and len(x) == 2 and isinstance(x[0], str) and is_count(x[1]) for x in v
    )


def _nullable(check: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda v: v is None or check(v)


def _timeline_schema(cap: int) -> dict[str, Any]:
    return {"$ref": "#/$defs/timeline", "maxItems": cap}


_SECONDS = {"type": "number", "minimum": 0}
_COUNT = {"type": "integer", "minimum": 0}
_STR_LIST = {"type": "array", "items": {"type": "string"}}


class Kind:
    """A kind of value: ``check(v)``, ``expected`` (for messages: "should be ..."),
    ``schema`` (a JSON Schema) and ``words`` (the type column of the docs)."""

    __slots__ = ("check", "expected", "schema", "words")

    def __init__(
        self, check: Callable[[object], bool], expected: str, schema: dict[str, Any], words: str
    ) -> None:
        self.check = check
        self.expected = expected
        self.schema = schema
        self.words = words


KINDS: dict[str, Kind] = {
    "format": Kind(
        lambda v: v == PROFILE_FORMAT,
        repr(PROFILE_FORMAT),
        {"const": PROFILE_FORMAT},
        f'`"{PROFILE_FORMAT}"`',
    ),
    "schema-version": Kind(
        lambda v: is_int(v) and v == SCHEMA_VERSION,
        str(SCHEMA_VERSION),
        {"const": SCHEMA_VERSION},
        f"`{SCHEMA_VERSION}`",
    ),
    "python-version": Kind(
        lambda v: isinstance(v, str),
        "a string",
        {"type": "string", "pattern": "^3\\.[0-9]+\\.[0-9]+"},
        "string",
    ),
    "seconds": Kind(is_seconds, "a non-negative number", _SECONDS, "number ≥ 0"),
    "seconds?": Kind(
        _nullable(is_seconds),
        "a non-negative number or null",
        {"type": ["number", "null"], "minimum": 0},
        "number ≥ 0 or null",
    ),
    "time": Kind(is_number, "a number", {"type": "number", "minimum": 0}, "number"),
    "count": Kind(is_count, "a non-negative integer", _COUNT, "integer ≥ 0"),
    "positive": Kind(
        lambda v: is_number(v) and v > 0,  # type: ignore[operator]
        "a positive number",
        {"type": "number", "exclusiveMinimum": 0},
        "number > 0",
    ),
    "window": Kind(
        lambda v: is_number(v) and v > 0,  # type: ignore[operator]
        "a positive number",
        {"$ref": "#/$defs/window"},
        "number > 0",
    ),
    "int": Kind(is_int, "an integer", {"type": "integer"}, "integer"),
    "int?": Kind(
        _nullable(is_int), "an integer or null", {"type": ["integer", "null"]}, "integer or null"
    ),
    "str": Kind(lambda v: isinstance(v, str), "a string", {"type": "string"}, "string"),
    "nonempty-str": Kind(
        lambda v: isinstance(v, str), "a string", {"type": "string", "minLength": 1}, "string"
    ),
    "str?": Kind(
        _nullable(lambda v: isinstance(v, str)),
        "a string or null",
        {"type": ["string", "null"]},
        "string or null",
    ),
    "nonempty-str?": Kind(
        _nullable(lambda v: isinstance(v, str)),
        "a string or null",
        {"type": ["string", "null"], "minLength": 1},
        "string or null",
    ),
    "bool": Kind(lambda v: isinstance(v, bool), "true or false", {"type": "boolean"}, "boolean"),
    "list": Kind(lambda v: isinstance(v, list), "a list", {"type": "array"}, "list"),
    "str-list": Kind(_is_str_list, "a list of strings", _STR_LIST, "list of strings"),
    "str-list?": Kind(
        _nullable(_is_str_list),
        "a list of strings or null",
        {"type": ["array", "null"], "items": {"type": "string"}},
        "list of strings or null",
    ),
    "mb": Kind(is_seconds, "a non-negative number", {"$ref": "#/$defs/mb"}, "number ≥ 0"),
    "fraction": Kind(
        _is_fraction, "a number from 0 to 1", {"$ref": "#/$defs/fraction"}, "number 0..1"
    ),
    "percent": Kind(
        lambda v: is_seconds(v) and v <= 100,  # type: ignore[operator]
        "a percentage",
        {"type": "number", "minimum": 0, "maximum": 100},
        "number 0..100",
    ),
    "nonempty-list": Kind(
        lambda v: isinstance(v, list) and len(v) > 0,
        "a non-empty list",
        {"type": "array", "minItems": 1},
        "non-empty list",
    ),
    "lineno": Kind(is_count, "a non-negative integer", {"$ref": "#/$defs/lineno"}, "integer ≥ 0"),
    "lineno?": Kind(
        _nullable(is_count),
        "a line number or null",
        {"type": ["integer", "null"], "minimum": 0},
        "integer ≥ 0 or null",
    ),
    "run-timeline": Kind(
        _is_timeline(FOOTPRINT_POINTS),
        f"a list of at most {FOOTPRINT_POINTS} [t_s, mb] pairs",
        _timeline_schema(FOOTPRINT_POINTS),
        f"timeline (≤ {FOOTPRINT_POINTS} points)",
    ),
    "line-timeline": Kind(
        _is_timeline(LINE_POINTS),
        f"a list of at most {LINE_POINTS} [t_s, mb] pairs",
        _timeline_schema(LINE_POINTS),
        f"timeline (≤ {LINE_POINTS} points)",
    ),
    "functions-option": Kind(
        _is_pair_list,
        "a list of [file, first_lineno] pairs",
        {
            "type": "array",
            "items": {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"$ref": "#/$defs/lineno"}],
                "minItems": 2,
                "maxItems": 2,
            },
        },
        "list of [file, first_lineno]",
    ),
    "frame-file": Kind(
        lambda v: isinstance(v, str) or is_count(v),
        "a non-empty string or an index into frame_files",
        {"anyOf": [{"type": "string", "minLength": 1}, _COUNT]},
        "string, or index into `frame_files`",
    ),
    "frame-indexes": Kind(
        lambda v: isinstance(v, list) and all(is_count(f) for f in v),
        "a list of frame indexes",
        {"type": "array", "minItems": 1, "maxItems": STACK_FRAMES, "items": _COUNT},
        "list of frame indexes",
    ),
}


def kind(name: str) -> Kind:
    """The kind ``name``; containers ("list:L", "map:L", "object:L") are lists, objects
    keyed by strings, and objects (their items are checked level by level)."""
    if name in KINDS:
        return KINDS[name]
    shape, _, level = name.partition(":")
    if shape == "list":
        return Kind(
            lambda v: isinstance(v, list),
            "a list",
            {"type": "array", "items": {"$ref": f"#/$defs/{level}"}},
            f"list of {level} objects",
        )
    if shape == "map":
        return Kind(
            lambda v: isinstance(v, dict),
            "an object",
            {
                "type": "object",
                "propertyNames": {"minLength": 1},
                "additionalProperties": {"$ref": f"#/$defs/{level}"},
            },
            f"object of {level} objects",
        )
    if shape == "object":
        return Kind(
            lambda v: isinstance(v, dict),
            "an object",
            {"$ref": f"#/$defs/{level}"},
            f"{level} object",
        )
    raise KeyError(f"no kind {name!r}")


__all__ = [
    "FOOTPRINT_POINTS",
    "KINDS",
    "LINE_POINTS",
    "LINE_POINTS_WRITTEN",
    "STACK_FRAMES",
    "Kind",
    "is_count",
    "is_int",
    "is_number",
    "is_seconds",
    "kind",
]
