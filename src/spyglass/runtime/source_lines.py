"""A source file's lines as Python reads them (its encoding from a BOM or a coding
comment, universal newlines), read as a profiled process leaves, without linecache.

linecache imports tokenize, which builds named tuples with eval(); an eval() during
interpreter shutdown clears CPython's record of an uncaught KeyboardInterrupt, and the
program would then end with status 1 instead of dying of SIGINT as it does under plain
python. Importing it at start instead would cost every process milliseconds."""

from __future__ import annotations

import codecs
import os
import stat

_CODING_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def _cookie(line: bytes) -> str | None:
    """The encoding a `# -*- coding: NAME -*-` comment names (PEP 263), if any."""
    text = line.decode("latin-1").lstrip(" \t\f")
    if not text.startswith("#"):
        return None
    at = text.find("coding")
    while at != -1:
        rest = text[at + len("coding") :]
        if rest[:1] in (":", "="):
            rest = rest[1:].lstrip(" \t")
            name = ""
            for ch in rest:
                if ch not in _CODING_CHARS:
                    break
                name += ch
            if name:
                return name
        at = text.find("coding", at + 1)
    return None


def _is_blank_or_comment(line: bytes) -> bool:
    text = line.strip(b" \t\f\r\n")
    return not text or text.startswith(b"#")


def encoding_of(data: bytes) -> str:
    """The encoding Python decodes a source file with (UTF-8 unless it says otherwise)."""
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    first, _, after = data.partition(b"\n")
    second = after.partition(b"\n")[0]
    name = _cookie(first)
    if name is None and _is_blank_or_comment(first):
        name = _cookie(second)
    if name is None:
        return "utf-8"
    try:
        return codecs.lookup(name).name
    except LookupError:
        return "utf-8"


def read_lines(path: str) -> list[str]:
    """The file's lines, without their line ends; empty when it cannot be read, or is no
    regular file (a pipe the program read its script from can be read only once, and
    reading it again would wait forever)."""
    data: bytes | None
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return []
        with open(path, "rb") as f:
            data = f.read()
    except (NotADirectoryError, FileNotFoundError):
        data = _zip_member(path)
    except (OSError, ValueError):
        return []
    if data is None:
        return []
    text = data.decode(encoding_of(data), errors="replace")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the end of the last line, not a line
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    return lines


def _zip_member(path: str) -> bytes | None:
    """A file inside a zip archive Python imports from (`python app.pyz`, a zipped
    package on sys.path): its code names the archive's path, then the member's."""
    archive, member = path, ""
    while archive and not os.path.isfile(archive):
        archive, name = os.path.split(archive)
        if not name:
            return None
        member = f"{name}/{member}" if member else name
    if not archive or not member:
        return None
    import zipfile  # only for such a file: nothing of it runs as every process leaves

    try:
        with zipfile.ZipFile(archive) as z:
            return z.read(member)
    except Exception:  # missing, encrypted, compressed some unknown way, corrupt
        return None
