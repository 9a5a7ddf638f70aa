"""JSON text of plain values (dicts with string keys, lists, tuples, strings, numbers,
booleans, None), the same text `json.dumps` makes of them, without importing `json`: its
decoder imports `re`, and every profiled process would pay milliseconds of start-up for
the few small objects it serialises (its profile's metadata, its journal's header)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from collections.abc import Callable

_quote: Callable[[str], str] | None
try:
    # The C function json.dumps itself quotes strings with (ensure_ascii, its default).
    from _json import encode_basestring_ascii as _quote
except ImportError:  # an interpreter without the accelerator: json's own, at its price
    _quote = None


def dumps(value: object) -> str:
    """`json.dumps(value)` for plain values; other values go to json.dumps itself."""
    if _quote is None:
        return _json_dumps(value)
    parts: list[str] = []
    try:
        _encode(value, parts.append, _quote)
    except _NotPlain:
        return _json_dumps(value)
    return "".join(parts)


class _NotPlain(Exception):
    pass


def _json_dumps(value: object) -> str:
    import json

    return json.dumps(value)


_FLOAT_NAMES = {float("inf"): "Infinity", float("-inf"): "-Infinity"}


def _encode(value: object, out: Callable[[str], object], quote: Callable[[str], str]) -> None:
    if isinstance(value, str):
        out(quote(value))
    elif value is None:
        out("null")
    elif value is True:
        out("true")
    elif value is False:
        out("false")
    elif type(value) is int:
        out(int.__repr__(value))
    elif type(value) is float:
        if value != value:
            out("NaN")
        else:
            out(_FLOAT_NAMES.get(value) or float.__repr__(value))
    elif isinstance(value, (list, tuple)):
        out("[")
        for i, item in enumerate(value):
            if i:
                out(", ")
            _encode(item, out, quote)
        out("]")
    elif type(value) is dict:
        out("{")
        for i, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise _NotPlain  # json.dumps converts numbers and booleans: let it
            out(", " + quote(key) + ": " if i else quote(key) + ": ")
            _encode(item, out, quote)
        out("}")
    else:
        raise _NotPlain
