"""JSON in and out through the C accelerator that `json` itself calls, without importing
`json`: its decoder and encoder modules import `re`, and with it enum, functools and
collections, about ten milliseconds at the end of every `spyglass run` (the merge reads
the processes' profiles and writes the run's; the report needs no more). Where the
accelerator is missing, or a text is not valid JSON, `json` itself does the work, so
errors are json's own (`json.JSONDecodeError`, a ValueError)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# Loosely typed: typeshed's signatures take json's own classes where any object with their
# attributes does.
_accel: Any = None
try:
    import _json

    _accel = _json
except ImportError:  # an interpreter without the accelerator: json's own, at its price
    pass


def quote(s: str) -> str:
    """A string as JSON text (ASCII, as json.dumps writes it by default)."""
    if _accel is not None:
        text: str = _accel.encode_basestring_ascii(s)
        return text
    import json

    return json.dumps(s)


_INFINITY = float("inf")
_CONSTANTS = {"NaN": float("nan"), "Infinity": _INFINITY, "-Infinity": -_INFINITY}
_WHITESPACE = " \t\n\r"


class _Context:
    """What the C scanner reads from a json.JSONDecoder: json.loads's defaults."""

    __slots__ = (
        "object_hook",
        "object_pairs_hook",
        "parse_constant",
        "parse_float",
        "parse_int",
        "strict",
    )

    def __init__(self, parse_int: Callable[[str], object]) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = None
        self.parse_float = float
        self.parse_int = parse_int
        self.parse_constant = _CONSTANTS.__getitem__


_default_scan: Any = _accel.make_scanner(_Context(int)) if _accel is not None else None


def loads(text: str, *, parse_int: Callable[[str], object] | None = None) -> Any:
    """`json.loads(text, parse_int=parse_int)`."""
    if _accel is not None:
        scan = _default_scan if parse_int is None else _accel.make_scanner(_Context(parse_int))
        begin = _skip_whitespace(text, 0)
        try:
            value, end = scan(text, begin)
        except StopIteration:
            pass  # not a JSON value: json says where and why
        else:
            if _skip_whitespace(text, end) == len(text):
                return value
    import json

    return json.loads(text, parse_int=parse_int)


def leading_members(text: str, stop: str) -> tuple[dict[str, Any], dict[str, tuple[int, int]], int]:
    """The members of the JSON object ``text`` up to the first named ``stop``, decoded, without
    reading further: what each holds, where its value's text starts and ends, and where the
    ``stop`` member's key starts. ValueError when ``text`` is no object as far as it is read,
    or has no such member; a key repeated before it keeps its last value."""
    if _accel is None:
        raise ValueError("no JSON accelerator")  # the caller reads the whole text instead
    values: dict[str, Any] = {}
    spans: dict[str, tuple[int, int]] = {}
    i = _skip_whitespace(text, 0)
    if not text.startswith("{", i):
        raise ValueError("not a JSON object")
    i = _skip_whitespace(text, i + 1)
    while text.startswith('"', i):
        key_start = i
        key, i = _accel.scanstring(text, i + 1, True)
        i = _skip_whitespace(text, i)
        if not text.startswith(":", i):
            raise ValueError(f"no ':' at {i}")
        i = _skip_whitespace(text, i + 1)
        if key == stop:
            return values, spans, key_start
        try:
            values[key], end = _default_scan(text, i)
        except StopIteration:
            raise ValueError(f"no JSON value at {i}") from None
        spans[key] = (i, end)
        i = _skip_whitespace(text, end)
        if not text.startswith(",", i):
            break
        i = _skip_whitespace(text, i + 1)
    raise ValueError(f"no member {stop!r}")


def _skip_whitespace(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in _WHITESPACE:
        i += 1
    return i


def _not_serializable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: object, *, compact: bool = False) -> str:
    """`json.dumps(value)`; with ``compact``, without the spaces after separators."""
    items, keys = (",", ":") if compact else (", ", ": ")
    if _accel is None:
        import json

        return json.dumps(value, separators=(items, keys))
    encode = _accel.make_encoder(
        {}, _not_serializable, _accel.encode_basestring_ascii, None, keys, items, False, False, True
    )
    return "".join(encode(value, 0))


def members_before_last(text: str, key: str) -> Any:
    """The JSON object ``text`` without its last member named ``key`` and the members after
    it, decoded, without reading them; None when it has no such member. Valid JSON escapes
    every quote inside a string, so ``"key":`` appears only where a member of that name
    begins: a profile's member of a name no nested object uses is found from the end. A
    text damaged before it raises ValueError, as loads does."""
    at = text.rfind(quote(key) + ":")
    if at < 0:
        return None
    head = text[:at].rstrip()
    if not head.endswith(","):
        return None  # the first member: nothing before it worth the trouble
    return loads(head[:-1] + "}")
