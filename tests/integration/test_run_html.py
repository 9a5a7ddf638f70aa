"""`spyglass run --html`: a real run of examples/demo.py writes the JSON profile and a
self-contained HTML page holding the same profile."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from helpers import REPO_ROOT, RUN_TIMEOUT_S, Runner, load_profile, program, with_zeros
from spyglass.reporters.page_data import unpack

MARKER_PROGRAM = program("creates_marker.py")

# Attributes through which a page can make the browser fetch something.
FETCHING = {"src", "href", "srcset", "action", "formaction", "poster", "data", "background"}


class Page(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.attrs: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.islands: dict[str, str] = {}
        self.styles: list[str] = []
        self._in: tuple[str, str | None] | None = None
        self._text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs += [(tag, name, value or "") for name, value in attrs]
        if tag in ("script", "style"):
            self._in = (tag, dict(attrs).get("id"))
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._in is not None and self._in[0] == tag:
            text = "".join(self._text)
            if tag == "style":
                self.styles.append(text)
            elif self._in[1] is not None:
                self.islands[self._in[1]] = text
            self._in = None


@pytest.fixture(scope="module")
def html_run(
    tmp_path_factory: pytest.TempPathFactory, child_env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    out = tmp_path_factory.mktemp("run-html")
    page, profile = out / "X.html", out / "P.json"
    cmd = [sys.executable, "-m", "spyglass", "run", "--html", str(page), "--no-report"]
    cmd += ["-o", str(profile), "examples/demo.py"]
    done = subprocess.run(
        cmd,
        cwd=REPO_ROOT,
        env=child_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    return done, page, profile


def test_writes_both_files(html_run: tuple[Any, Path, Path]) -> None:
    done, page, profile = html_run
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # --no-report: nothing but the program's own output
    assert profile.is_file() and page.is_file()
    assert sorted(p.name for p in page.parent.iterdir()) == ["P.json", "X.html"]


def test_the_page_holds_the_profile(html_run: tuple[Any, Path, Path]) -> None:
    _, page, profile_path = html_run
    profile = load_profile(profile_path)
    doc = page.read_text(encoding="utf-8")
    assert doc.startswith("<!DOCTYPE html>")
    islands = Page(doc).islands
    assert with_zeros(unpack(json.loads(islands["profile-data"]))) == profile
    config = json.loads(islands["report-config"])
    assert config["profile_path"] == str(profile_path)
    assert any(path.endswith("examples/demo.py") for path in config["files"])


def test_the_page_fetches_nothing(html_run: tuple[Any, Path, Path]) -> None:
    _, page, _ = html_run
    doc = page.read_text(encoding="utf-8")
    parsed = Page(doc)
    for tag, name, value in parsed.attrs:
        if name in FETCHING:
            assert value.startswith("data:"), f"<{tag} {name}={value!r}>"
    for style in parsed.styles:
        assert "@import" not in style
        assert all(u.strip("'\"").startswith("data:") for u in re.findall(r"url\(([^)]*)\)", style))
    # The SVG namespace is an identifier the page needs to draw charts, never fetched.
    text = doc.replace("http://www.w3.org/2000/svg", "")
    assert not re.search(r"(?i)\b(?:https?|ftp|wss?):|(?:src|href)\s*=\s*[\"']?//", text)
    csp = [v for t, n, v in parsed.attrs if t == "meta" and n == "content" and "default-src" in v]
    assert len(csp) == 1 and "default-src 'none'" in csp[0]


def test_html_without_a_name_goes_next_to_the_profile(runner: Runner) -> None:
    # `--html SCRIPT`: the script is the target, not the page's name.
    marker = runner.workdir / "ran.txt"
    outfile = runner.workdir / "prof.json"
    proc, profile = runner.spyglass(
        [MARKER_PROGRAM, marker], options=["--html"], outfile=outfile, report=True
    )
    assert proc.returncode == 0, proc.stderr
    assert marker.exists()
    page = runner.workdir / "prof.html"
    assert proc.stderr.splitlines()[-1] == f"HTML report written to {page}"
    assert profile is not None
    island = Page(page.read_text(encoding="utf-8")).islands["profile-data"]
    assert with_zeros(unpack(json.loads(island))) == profile


def test_unwritable_html_is_refused_before_the_target_runs(runner: Runner) -> None:
    marker = runner.workdir / "ran.txt"
    page = runner.workdir / "no" / "such" / "dir" / "report.html"
    proc, _ = runner.spyglass(
        [MARKER_PROGRAM, marker], options=["--html", str(page)], expect_profile=False
    )
    assert not marker.exists(), "the target ran although the HTML page cannot be written"
    assert proc.returncode == 2
    assert proc.stderr == (
        f"spyglass: error: cannot write the HTML report to {str(page)!r}: "
        f"directory {str(page.parent)!r} does not exist\n"
    )


@pytest.mark.slow
def test_a_threading_http_server_page_stays_under_300_kb(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """610 threads, memory on (the default): the page carries every thread, stack and frame
    packed (spyglass.reporters.page_data), under the 300 KB the issue sets."""
    page, profile = tmp_path / "server.html", tmp_path / "server.json"
    cmd = [sys.executable, "-m", "spyglass", "run", "--html", str(page), "--no-report"]
    cmd += ["-o", str(profile), str(program("threading_http_server.py"))]
    done = subprocess.run(
        cmd,
        cwd=tmp_path,
        env=child_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr
    threads = len(load_profile(profile)["threads"])
    unpacked = len(json.dumps(load_profile(profile), separators=(",", ":")).encode())
    print(f"\n{threads} threads: page {page.stat().st_size} bytes (profile {unpacked} bytes)")
    assert threads >= 600
    assert page.stat().st_size < 300_000
