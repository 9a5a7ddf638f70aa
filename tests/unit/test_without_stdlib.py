"""The report path does without textwrap, shlex and re (each imports re, tens of
milliseconds at the end of every run, with enum, functools and collections): what
replaces them gives what they give, on random inputs made of the awkward parts."""

from __future__ import annotations

import random
import re
import shlex
import textwrap

from spyglass.profile_model.module_paths import module_key
from spyglass.profile_model.queries import shell_quote
from spyglass.profile_model.task_types import _in_stdlib
from spyglass.reporters.styled import cell_len
from spyglass.reporters.terminal_text import wrap
from spyglass.reporters.thread_groups import name_pattern
from spyglass.safe_text import escape_text, json_text_safe


def _texts(parts: list[str], n: int, most: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(parts) for _ in range(rng.randint(0, most))) for _ in range(n)]


def test_wrap_cuts_prose_as_textwrap_does() -> None:
    words = ["a", "bb", "spyglass", "--profile-all", "/a/long/path/to/some/file.py", "x" * 50]
    words += ["no\u00a0break"]  # a no-break space joins words, as in textwrap
    rng = random.Random(1)
    for text in _texts([w + " " for w in words], 3000, 25, 1):
        indent = rng.choice(["", "  ", "    - "])
        width = rng.randint(len(indent) + 8, 90)  # a line holds a few characters at least
        theirs = textwrap.wrap(
            text,
            width,
            initial_indent=indent,
            subsequent_indent=" " * len(indent),
            break_on_hyphens=False,
        )
        # textwrap leaves a space at the end of a line before a long word it cuts
        assert wrap(text, width, indent) == [line.rstrip(" ") for line in theirs], (text, width)


def test_shell_quote_is_shlex_quote() -> None:
    for arg in _texts(list("ab1_@%+=:,./- '\"$é\t\n*?"), 5000, 6, 2):
        assert shell_quote(arg) == shlex.quote(arg), arg


def test_thread_name_patterns_turn_digit_runs_into_n() -> None:
    for name in _texts(["Thread-", "12", "7", " (serve)", "N", "١٢", "x"], 3000, 6, 3):
        assert name_pattern(name) == (re.sub(r"\d+", "N", name) if name else "(unnamed)")


def test_module_keys_and_the_standard_library_as_the_patterns_find_them() -> None:
    library = re.compile(r"/(?:site|dist)-packages/(.+)$")
    stdlib = re.compile(r"/lib/(python3\.\d+)/(.+)$")
    in_stdlib = re.compile(r"/lib(64)?/python3\.\d+t?/")
    parts = ["/usr", "/lib", "/lib64", "/python3.", "11", "t", "/", "/site-packages/"]
    parts += ["/dist-packages/", "a.py", "\\", "/lib/python3.9/", "٣", "x"]
    for path in _texts(parts, 20000, 8, 4):
        p = path.replace("\\", "/")
        found, std = library.search(p), stdlib.search(p)
        expected = (
            "site-packages/" + found[1]
            if found
            else f"{std[1]}/{std[2]}"
            if std and "/site-packages/" not in p
            else None
        )
        assert module_key(path) == expected, path
        assert _in_stdlib(path) == (in_stdlib.search(p) is not None and "-packages/" not in p)


def test_escapes_are_the_unsafe_characters_and_only_they() -> None:
    unsafe = re.compile(
        "[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
    )
    codes = [*range(0x200), *range(0x2020, 0x2070), 0xD800, 0xDFFF, 0xE000, 0x1F600]
    for text in _texts([chr(c) for c in codes] + ["plain "], 20000, 10, 5):
        hexed = unsafe.sub(
            lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text
        )
        assert escape_text(text) == hexed, repr(text)
        kept = unsafe.sub(lambda m: m[0] if m[0] in "\n\r" else f"\\u{ord(m[0]):04x}", text)
        assert json_text_safe(text) == kept, repr(text)


def test_cell_widths_without_unicodedata_where_the_glyphs_are_known() -> None:
    import unicodedata

    def cells(c: str) -> int:
        if ord(c) < 32 or 0x7F <= ord(c) < 0xA0:
            return 0
        if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf"):
            return 0
        return 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1

    for code in [*range(0x2400, 0x2700), *range(0x22E0, 0x2300), 0x2026, 0x200B, 0x4E00]:
        assert cell_len(chr(code)) == cells(chr(code)), hex(code)
