"""The HTML page of a diff: spyglass.reporters.diff_html (the page is checked as text here;
tests/browser/test_diff_html_in_chromium.py draws it)."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from spyglass.profile_model import queries as proc
from spyglass.profile_model.diffing import diff_profiles, diff_to_json
from spyglass.reporters.comparison import Comparison
from spyglass.reporters.diff_html import (
    DIFF_CSS,
    ISLAND,
    SCRIPTS,
    DiffHtmlReporter,
    diff_document,
    render_diff_html,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ASSETS = Path(__file__).resolve().parents[2] / "src" / "spyglass" / "reporters" / "html_assets"
SIMPLE = "/home/ada/demo/simple.py"
EVIL = "/home/eve/</script><script>window.__pwned=1;alert(1)</script>/evil.py"
CPU = ("cpu_python_s", "cpu_native_s", "cpu_system_s")

# The payloads of tests/fixtures/hostile.json, and one in a file name given to the command.
PAYLOADS = (
    "</script><script>window.__pwned=1;alert(1)</script>",
    '<img src=x onerror="window.__pwned=2;alert(2)">',
    '"\'><b onmouseover="window.__pwned=3">q</b>',
    "<!-- <script>window.__pwned=4</script> -->",
)
HOSTILE_NAME = "</script><style>*{display:none}</style><b>before.json"


def fixture(name: str) -> dict[str, Any]:
    with open(FIXTURES / name, encoding="utf-8") as fh:
        doc: dict[str, Any] = json.load(fh)
    return doc


def slowed(profile: dict[str, Any], path: str, lineno: int, factor: float, more: int) -> Any:
    """A copy of ``profile`` with line ``lineno`` of ``path`` ``factor`` times as slow and
    ``more`` samples more; its function, file and the run's totals kept in step."""
    out = copy.deepcopy(profile)
    entry = out["files"][path]
    line = next(ln for ln in entry["lines"] if ln["lineno"] == lineno)
    owner = entry["functions"][proc.line_functions(out, path)[lineno]]
    added = {key: line[key] * (factor - 1) for key in CPU}
    for item in (line, owner, entry, out):
        for key in CPU:
            item[key] += added[key]
        item["samples"] += more
    return out


class Page(HTMLParser):
    """The elements of a page, the text of its <script>s and <style>s, and its title."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.styles: list[str] = []
        self.title = ""
        self._open: tuple[str, dict[str, str | None]] | None = None
        self._text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style", "title"):
            self._open, self._text = (tag, dict(attrs)), []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._open is not None and self._open[0] == tag:
            text = "".join(self._text)
            if tag == "script":
                self.scripts.append((self._open[1], text))
            elif tag == "style":
                self.styles.append(text)
            else:
                self.title = text
            self._open = None

    def island(self) -> Any:
        found = [(attrs, text) for attrs, text in self.scripts if attrs.get("id") == ISLAND]
        assert len(found) == 1
        assert found[0][0] == {"type": "application/json", "id": ISLAND}
        return json.loads(found[0][1])

    def csp(self) -> str:
        found = [a.get("content") for _, a in self.tags if a.get("http-equiv")]
        assert len(found) == 1 and found[0] is not None
        return found[0]


@pytest.fixture(scope="module")
def simple_pair() -> tuple[dict[str, Any], dict[str, Any]]:
    before = fixture("cpu_simple.json")
    return before, slowed(before, SIMPLE, 8, 2.0, 199)  # 1.99 s/199 -> 3.98 s/398 samples


@pytest.fixture(scope="module")
def page(simple_pair: tuple[dict[str, Any], dict[str, Any]]) -> str:
    before, after = simple_pair
    diff = diff_profiles(before, after)
    return render_diff_html(diff, before, after, before_name="old.json", after_name="new.json")


@pytest.fixture(scope="module")
def hostile_page() -> str:
    before = fixture("hostile.json")
    after = slowed(before, EVIL, 3, 3.0, 86)
    diff = diff_profiles(before, after)
    assert diff.slower() and PAYLOADS[0] in diff.slower()[0].source
    return render_diff_html(diff, before, after, before_name=HOSTILE_NAME, after_name="a.json")


def test_the_page_holds_the_diff_in_a_data_island(
    page: str, simple_pair: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    assert page.startswith('<!DOCTYPE html>\n<html lang="en">')
    assert page.rstrip().endswith("</html>")
    parsed = Page(page)
    assert len(parsed.styles) == 1
    assert [a.get("type") for a, _ in parsed.scripts] == ["application/json", None]
    doc = parsed.island()
    before, after = simple_pair
    expected = diff_to_json(
        diff_profiles(before, after), before, after, before_name="old.json", after_name="new.json"
    )
    assert {k: v for k, v in doc.items() if k not in ("before", "after")} == {
        k: v for k, v in expected.items() if k not in ("before", "after")
    }
    for side in ("before", "after"):
        assert doc[side] == dict(expected[side], spyglass_version="0.1.0")
    # The regression: line 8, twice as slow, with many samples.
    [slower] = [c for c in doc["lines"] if c["verdict"] == "slower"]
    assert (slower["after_lineno"], slower["source"]) == (8, "total += (i * i) % 7")
    assert slower["delta_s"] == pytest.approx(1.991)
    assert doc["before"]["file"] == "old.json" and doc["after"]["file"] == "new.json"
    assert parsed.title == "spyglass diff · simple.py"
    code = parsed.scripts[-1][1]
    for name in SCRIPTS:
        assert f"/* ---- {name} ---- */" in code
    assert parsed.styles[0].endswith(DIFF_CSS)


RESOURCE_URL = re.compile(r"""(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


def test_no_external_resources_and_a_strict_csp(page: str) -> None:
    assert not RESOURCE_URL.search(page)
    assert not re.search(r"url\(\s*['\"]?\s*(?:https?:)?//", page, re.I)
    assert "@import" not in page and "@font-face" not in page
    parsed = Page(page)
    for tag, attrs in parsed.tags:
        for attr in ("src", "href"):
            value = attrs.get(attr)
            assert value is None or value.startswith(("#", "data:")), f"<{tag} {attr}={value}>"
    csp = parsed.csp()
    assert "default-src 'none'" in csp and "base-uri 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp

    def sha256(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    assert f"script-src {sha256(parsed.scripts[-1][1])}" in csp
    assert f"style-src {sha256(parsed.styles[0])}" in csp


def test_hostile_strings_stay_escaped(hostile_page: str) -> None:
    parsed = Page(hostile_page)
    # Nothing beyond the page's own elements, however the profiles' strings read.
    assert {t for t, _ in parsed.tags} == {
        "html",
        "head",
        "meta",
        "link",
        "title",
        "style",
        "body",
        "div",
        "noscript",
        "code",
        "script",
    }
    assert len(parsed.scripts) == 2 and len(parsed.styles) == 1
    for _, attrs in parsed.tags:
        assert not [a for a in attrs if a.lower().startswith("on")]
    for payload in (*PAYLOADS, HOSTILE_NAME):
        assert payload not in hostile_page
    # ... and yet every string is there, as data, for the script to show as text.
    doc = parsed.island()
    text = json.dumps(doc, ensure_ascii=False)
    for payload in PAYLOADS:
        assert json.dumps(payload, ensure_ascii=False)[1:-1] in text
    assert doc["before"]["file"] == HOSTILE_NAME
    assert "\u2028" not in hostile_page and "\u2029" not in hostile_page
    assert parsed.title.startswith("spyglass diff · " + PAYLOADS[0])
    assert "<title>spyglass diff · &lt;/script&gt;&lt;script&gt;" in hostile_page


def test_the_script_never_parses_markup() -> None:
    code = (ASSETS / "diff.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in code
    for sink in ("new Function", "setTimeout(", "srcdoc", "createContextualFragment", "href"):
        assert sink not in code
    lowered = (code + DIFF_CSS).lower()
    assert "</script" not in lowered and "</style" not in lowered and "<!--" not in lowered
    assert "url(" not in DIFF_CSS


def test_write_diff_html(
    tmp_path: Path, simple_pair: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    before, after = simple_pair
    diff = diff_profiles(before, after, threshold_sigma=3)
    target = tmp_path / "d.html"
    DiffHtmlReporter().write(Comparison(diff, before, after), target)
    doc = Page(target.read_text(encoding="utf-8")).island()
    assert doc["threshold_sigma"] == 3 and doc["before"]["file"] is None
    assert doc == diff_document(diff, before, after)
