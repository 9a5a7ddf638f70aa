"""Text from a profile made safe for a terminal.

File paths, source lines, function, thread and program names come from the program or
from a profile someone shared: a control character among them would reach the terminal
as a command (set the title, write the clipboard with OSC 52, clear the screen, move the
cursor). Every one is shown escaped instead (``\\x1b``, ``\\u202e``), whatever the output
(colour or not, terminal or pipe); spyglass's own colours are added after, by the
renderer, and are not data.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# C0 controls but the tab, DEL, C1 controls (a terminal in UTF-8 takes U+009B as CSI), lone
# surrogates (which no encoder writes), and the bidirectional overrides and isolates and
# line/paragraph separators, which rearrange or break what is shown.
_UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _escape_char(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def escape_text(text: str) -> str:
    """`text` with every character that could act on a terminal written as an escape."""
    return _UNSAFE.sub(_escape_char, text) if _UNSAFE.search(text) else text


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


def json_text_safe(text: str) -> str:
    """JSON text (as json.dumps with ensure_ascii=False writes it) with the characters
    `escape_text` would escape written as JSON \\u escapes: the same document, which no
    longer carries raw controls to a terminal it is printed on."""
    if not _UNSAFE.search(text):
        return text
    # Outside strings JSON has only ASCII punctuation and whitespace (tab, LF, CR): the
    # newlines json.dumps writes for indentation are kept.
    return _UNSAFE.sub(
        lambda m: m.group() if m.group() in "\n\r" else f"\\u{ord(m.group()):04x}", text
    )


__all__ = ["escape_data", "escape_text", "json_text_safe"]
