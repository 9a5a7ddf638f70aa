"""source_lines reads a file's lines as linecache does (encodings, BOMs, line ends)."""

from __future__ import annotations

import linecache
from pathlib import Path

import pytest

from spyglass.runtime.source_lines import read_lines

SOURCES = {
    "plain": b"x = 1\ny = 2\n",
    "no final newline": b"x = 1\ny = 2",
    "crlf and cr": b"a = 1\r\nb = 2\rc = 3\r\n",
    "form feed stays in its line": b"a = 1\x0cb = 2\n# \xe2\x80\xa8 sep\n",
    "utf-8 bom": b"\xef\xbb\xbfs = '\xc3\xa9'\n",
    "latin-1 cookie": b"# -*- coding: latin-1 -*-\ns = '\xe9'\n",
    "cookie on the second line": (
        b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\ns = '\x80'\n"
    ),
    "cookie after code is no cookie": b"x = 1\n# coding: latin-1\ns = '\xc3\xa9'\n",
    "unknown cookie": b"# coding: no-such-codec\nx = 1\n",
    "undecodable bytes": b"s = '\xff\xfe'\n",
}


@pytest.mark.parametrize("name", SOURCES)
def test_lines_as_linecache_reads_them(tmp_path: Path, name: str) -> None:
    path = tmp_path / "source.py"
    path.write_bytes(SOURCES[name])
    if name in ("unknown cookie", "undecodable bytes"):
        # linecache gives nothing for a file it cannot decode (or raises, before 3.10):
        # the report keeps what can be read.
        assert read_lines(str(path))[-1].startswith(("x = 1", "s = '"))
        return
    expected = [line.rstrip("\r\n") for line in linecache.getlines(str(path))]
    linecache.checkcache(str(path))
    assert read_lines(str(path)) == expected


def test_a_missing_or_empty_file_has_no_lines(tmp_path: Path) -> None:
    assert read_lines(str(tmp_path / "gone.py")) == []
    (tmp_path / "empty.py").write_bytes(b"")  # linecache gives [""] for it from 3.13 on
    assert read_lines(str(tmp_path / "empty.py")) == []


def test_a_file_inside_a_zip_archive_is_read_from_it(tmp_path: Path) -> None:
    """`python app.pyz` names its code `app.pyz/__main__.py`: the report showed "source
    not available" for every line of a zipapp."""
    import zipfile

    archive = tmp_path / "app.pyz"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("__main__.py", "import pkg\nprint('hi')\n")
        z.writestr("pkg/mod.py", "# -*- coding: latin-1 -*-\ns = '\xe9'\n".encode("latin-1"))
    assert read_lines(str(archive / "__main__.py")) == ["import pkg", "print('hi')"]
    assert read_lines(str(archive / "pkg" / "mod.py"))[1] == "s = '\xe9'"
    assert read_lines(str(archive / "pkg" / "gone.py")) == []
    assert read_lines(str(tmp_path / "no-archive.pyz" / "__main__.py")) == []
