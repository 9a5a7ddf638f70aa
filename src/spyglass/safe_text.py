"""Text from a profile made safe for a terminal.

File paths, source lines, function, thread and program names come from the program or
from a profile someone shared: a control character among them would reach the terminal
as a command (set the title, write the clipboard with OSC 52, clear the screen, move the
cursor). Every one is shown escaped instead (``\\x1b``, ``\\u202e``), whatever the output
(colour or not, terminal or pipe); spyglass's own colours are added after, by the
renderer, and are not data.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _unsafe() -> list[int]:
    """C0 controls but the tab, DEL, C1 controls (a terminal in UTF-8 takes U+009B as CSI),
    lone surrogates (which no encoder writes), and the bidirectional overrides and isolates
    and line/paragraph separators, which rearrange or break what is shown."""
    spans = ((0x00, 0x08), (0x0A, 0x1F), (0x7F, 0x9F), (0x2028, 0x202E), (0x2066, 0x2069))
    codes = [c for first, last in spans for c in range(first, last + 1)]
    return codes + list(range(0xD800, 0xE000))


# str.translate tables, made on first use (re, which would do this in one expression, costs
# the end of every run milliseconds of import), and published whole by one assignment.
_escapes: dict[int, str] | None = None
_json_escapes: dict[int, str] | None = None


def _is_plain(text: str) -> bool:
    """Whether `text` certainly holds nothing to escape (ASCII with no control)."""
    return text.isascii() and (
        text.isprintable() or ("\x7f" not in text and all(c >= " " or c == "\t" for c in text))
    )


def escape_text(text: str) -> str:
    """`text` with every character that could act on a terminal written as an escape."""
    if _is_plain(text):
        return text
    global _escapes
    if _escapes is None:
        _escapes = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in _unsafe()}
    return text.translate(_escapes)


def escape_data(value: Any) -> Any:
    """A copy of a decoded JSON value with every string (keys included) escaped; the
    value itself when there is nothing to escape in it."""
    if isinstance(value, str):
        return escape_text(value)
    if isinstance(value, list):
        return [escape_data(v) for v in value]
    if isinstance(value, dict):
        return {escape_text(k): escape_data(v) for k, v in value.items()}
    return value


def dumped_json_is_plain(text: str) -> bool:
    """Whether JSON text written with ASCII escapes (json.dumps's default, and
    json_text.dumps) holds no string `escape_text` would change: it writes every control,
    DEL and non-ASCII character as an escape, and ``\\u``, ``\\b``, ``\\f``, ``\\n``,
    ``\\r`` are all such. (An escaped backslash before one of those letters reads as one
    too, which only costs the escaping that was never needed.) Checking the text is a few
    scans in C; escape_data walks every value of the profile in Python, tens of
    milliseconds at the end of a run with thousands of stacks."""
    return text.isascii() and "\x7f" not in text and not any(f"\\{c}" in text for c in "ubfnr")


def json_text_safe(text: str) -> str:
    """JSON text (as json.dumps with ensure_ascii=False writes it) with the characters
    `escape_text` would escape written as JSON \\u escapes: the same document, which no
    longer carries raw controls to a terminal it is printed on."""
    if _is_plain(text):
        return text
    global _json_escapes
    if _json_escapes is None:
        # Outside strings JSON has only ASCII punctuation and whitespace (tab, LF, CR): the
        # newlines json.dumps writes for indentation are kept.
        _json_escapes = {c: f"\\u{c:04x}" for c in _unsafe() if chr(c) not in "\n\r"}
    return text.translate(_json_escapes)


__all__ = ["dumped_json_is_plain", "escape_data", "escape_text", "json_text_safe"]
