"""The HTML reporter, without a browser: the document it writes, its data islands, escaping
of hostile text, self-containment and size. tests/browser runs the page in Chromium."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from spyglass import reporters
from spyglass.profile_model import queries as proc
from spyglass.reporters import get_reporter, render_report, unregister
from spyglass.reporters.html import (
    SCRIPTS,
    STYLESHEET,
    HtmlReporter,
    html_text,
    json_for_script,
    render_html,
    view_hints,
)
from spyglass.reporters.page_data import unpack

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ASSETS = Path(__file__).resolve().parents[2] / "src" / "spyglass" / "reporters" / "html_assets"
RENDERED = ("cpu_simple.json", "cpu_multifile.json", "hostile.json", "mem_simple.json")

# The payloads of tests/fixtures/hostile.json.
PAYLOADS = (
    "</script><script>window.__pwned=1;alert(1)</script>",
    '<img src=x onerror="window.__pwned=2;alert(2)">',
    '"\'><b onmouseover="window.__pwned=3">q</b>',
    "<!-- <script>window.__pwned=4</script> -->",
    "</style><style>*{display:none}</style>",
)


def fixture(name: str) -> dict[str, Any]:
    with open(FIXTURES / name, encoding="utf-8") as fh:
        doc: dict[str, Any] = json.load(fh)
    return doc


class Page(HTMLParser):
    """The elements of a document, and the text of each <script> and <style>."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.styles: list[str] = []
        self._open: tuple[str, dict[str, str | None]] | None = None
        self._text: list[str] = []
        self.title = ""
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style", "title"):
            self._open = (tag, dict(attrs))
            self._text = []

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

    def island(self, id_: str) -> Any:
        found = [text for attrs, text in self.scripts if attrs.get("id") == id_]
        assert len(found) == 1, f"{len(found)} data islands with id {id_!r}"
        assert dict(self.scripts[[a.get("id") for a, _ in self.scripts].index(id_)][0]) == {
            "type": "application/json",
            "id": id_,
        }
        data = json.loads(found[0])
        return unpack(data) if id_ == "profile-data" else data


@pytest.fixture(scope="module")
def documents() -> dict[str, str]:
    return {name: render_html(fixture(name)) for name in RENDERED}


@pytest.mark.parametrize("name", RENDERED)
def test_document_is_one_complete_page(documents: dict[str, str], name: str) -> None:
    doc = documents[name]
    assert doc.startswith('<!DOCTYPE html>\n<html lang="en">')
    assert doc.rstrip().endswith("</html>")
    page = Page(doc)
    tags = [t for t, _ in page.tags]
    for tag in ("html", "head", "meta", "title", "style", "body", "script"):
        assert tag in tags
    assert len(page.styles) == 1
    # Two data islands and the code; nothing else runs.
    assert [a.get("type") for a, _ in page.scripts] == ["application/json"] * 2 + [None]
    code = page.scripts[-1][1]
    for name_ in SCRIPTS:
        assert f"/* ---- {name_} ---- */" in code


@pytest.mark.parametrize("name", RENDERED)
def test_profile_island_round_trips(documents: dict[str, str], name: str) -> None:
    page = Page(documents[name])
    assert page.island("profile-data") == fixture(name)


def test_view_hints_match_the_terminal_report(multifile: dict[str, Any]) -> None:
    page = Page(render_html(multifile, profile_path="run.json"))
    hints = page.island("report-config")
    assert hints == json.loads(json.dumps(view_hints(multifile, profile_path="run.json")))
    shares = proc.file_share(multifile)
    assert hints["files"] == [s.path for s in shares]
    top = proc.top_lines(multifile, 5)
    assert hints["top"] == [[r.path, r.lineno] for r in top]
    always = {(r.path, r.lineno) for r in top}
    for s in shares:
        chosen = proc.select_lines(multifile, s.path, always=always)
        assert hints["matter"][s.path] == [ln["lineno"] for ln in chosen]
    assert hints["command"] == proc.command_line(multifile)
    assert hints["min_samples"] == proc.MIN_SAMPLES
    assert hints["profile_path"] == "run.json"


@pytest.mark.parametrize(
    "value",
    [
        "</script><script>alert(1)</script>",
        "<!--",
        "a & b > c < d",
        "\u2028\u2029",
        "back\\slash \\u003c",
        "\ud800 lone surrogate",
        "é ✓ 😀",
        {"<key>": ["</SCRIPT>", 1.5, None, True]},
    ],
)
def test_json_for_script_is_inert_and_exact(value: Any) -> None:
    text = json_for_script(value)
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert not re.search("[\ud800-\udfff]", text)
    text.encode("utf-8")  # strict: nothing unencodable left
    assert json.loads(text) == value


def test_html_text() -> None:
    text = "</title><b a=\"x\" b='y'>&\u2028\u2029\ud800"
    escaped = html_text(text)
    assert escaped == (
        "&lt;/title&gt;&lt;b a=&quot;x&quot; b=&#x27;y&#x27;&gt;&amp;&#x2028;&#x2029;\ufffd"
    )


def test_json_for_script_refuses_nan() -> None:
    with pytest.raises(ValueError):
        json_for_script({"x": float("nan")})


def test_hostile_text_appears_only_escaped(documents: dict[str, str]) -> None:
    doc = documents["hostile.json"]
    for payload in PAYLOADS:
        assert payload not in doc
    assert "\u2028" not in doc and "\u2029" not in doc
    assert "\\u003c/script\\u003e\\u003cscript\\u003ewindow.__pwned=1" in doc
    page = Page(doc)
    tags = {t for t, _ in page.tags}
    assert tags <= {
        "html",
        "head",
        "meta",
        "link",
        "title",
        "style",
        "body",
        "div",
        "script",
        "noscript",
        "code",
    }
    assert len(page.scripts) == 3 and len(page.styles) == 1
    for _, attrs in page.tags:
        assert not [a for a in attrs if a.lower().startswith("on")]
    # The title is the one piece of profile text written as HTML; it is escaped.
    assert page.title.startswith("spyglass · " + PAYLOADS[0])
    assert "<title>spyglass · &lt;/script&gt;&lt;script&gt;" in doc


RESOURCE_URL = re.compile(r"""(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


@pytest.mark.parametrize("name", RENDERED)
def test_nothing_is_fetched_from_the_network(documents: dict[str, str], name: str) -> None:
    doc = documents[name]
    assert not RESOURCE_URL.search(doc)
    assert not re.search(r"url\(\s*['\"]?\s*(?:https?:)?//", doc, re.I)
    assert "@import" not in doc and "@font-face" not in doc
    page = Page(doc)
    for tag, attrs in page.tags:
        for attr in ("src", "href"):
            value = attrs.get(attr)
            if value is not None:
                assert value.startswith(("#", "data:")), f"<{tag} {attr}={value!r}>"
    csp = [a["content"] for t, a in page.tags if a.get("http-equiv") == "Content-Security-Policy"]
    assert len(csp) == 1 and csp[0] is not None
    assert "default-src 'none'" in csp[0]
    assert "unsafe-inline" not in csp[0] and "unsafe-eval" not in csp[0]


def sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_csp_allows_exactly_the_inlined_code(documents: dict[str, str]) -> None:
    page = Page(documents["cpu_multifile.json"])
    csp = next(a["content"] for t, a in page.tags if a.get("http-equiv") is not None)
    assert csp is not None
    assert f"script-src {sha256_source(page.scripts[-1][1])}" in csp
    assert f"style-src {sha256_source(page.styles[0])}" in csp


def test_scripts_never_parse_markup() -> None:
    for name in SCRIPTS:
        code = (ASSETS / name).read_text(encoding="utf-8")
        for sink in (
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
            'setTimeout("',
            "srcdoc",
            "createContextualFragment",
        ):
            assert sink not in code, f"{name} uses {sink}"
    css = (ASSETS / STYLESHEET).read_text(encoding="utf-8")
    assert "url(" not in css and "@import" not in css


def test_size_budget(documents: dict[str, str]) -> None:
    for name, doc in documents.items():
        size = len(doc.encode("utf-8"))
        assert size < 300_000, f"{name}: {size} bytes"
    code = sum(len((ASSETS / n).read_bytes()) for n in (*SCRIPTS, STYLESHEET))
    assert code < 120_000
    # The data is stored compactly: little beyond the profile's own compact JSON.
    profile = fixture("cpu_multifile.json")
    compact = len(json.dumps(profile, separators=(",", ":")))
    overhead = len(documents["cpu_multifile.json"].encode("utf-8")) - compact
    assert overhead < code + 10_000


def test_write_html(tmp_path: Path, multifile: dict[str, Any]) -> None:
    target = tmp_path / "report.html"
    HtmlReporter().write(multifile, str(target))
    assert target.read_text(encoding="utf-8") == render_html(multifile)
    HtmlReporter().write(multifile, tmp_path / "again.html")
    assert (tmp_path / "again.html").read_bytes() == target.read_bytes()


def test_registered_as_the_built_in_html_reporter(simple: dict[str, Any]) -> None:
    assert "html" in reporters.available()
    reporter = get_reporter("html")
    assert isinstance(reporter, HtmlReporter)
    assert reporter.extensions[0] == ".html" and reporter.exact and not reporter.binary
    out = io.StringIO()
    render_report(simple, out, format="html", profile_path="p.json")
    assert out.getvalue() == render_html(simple, profile_path="p.json")
    assert reporter.render(simple) == render_html(simple)
    # Built in: forgetting it only forgets what replaced it.
    unregister("html")
    assert "html" in reporters.available()
    assert isinstance(get_reporter("html"), HtmlReporter)


def test_render_leaves_the_profile_alone(multifile: dict[str, Any]) -> None:
    before = json.dumps(multifile, sort_keys=True)
    render_html(multifile)
    assert json.dumps(multifile, sort_keys=True) == before


def test_a_profile_without_samples_renders(simple: dict[str, Any]) -> None:
    empty = dict(simple, files={}, frames=[], stacks=[], threads=[], samples=0)
    page = Page(render_html(empty))
    assert page.island("profile-data")["files"] == {}
    hints = page.island("report-config")
    assert hints["files"] == [] and hints["top"] == [] and hints["matter"] == {}


def test_unknown_fields_travel_to_the_page(simple: dict[str, Any]) -> None:
    # GPU figures of later profiles reach the page, whose tables show them.
    extended = json.loads(json.dumps(simple))
    extended["gpu_s"] = 1.25
    for line in next(iter(extended["files"].values()))["lines"]:
        line["gpu_mem_peak_bytes"] = 1 << 20
    assert Page(render_html(extended)).island("profile-data") == extended
    code = (ASSETS / "util.js").read_text(encoding="utf-8")
    assert '"gpu_s"' in code and '"gpu_mem_peak_bytes"' in code
