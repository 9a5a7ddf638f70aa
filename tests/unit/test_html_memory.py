"""The HTML report of a memory profile, without a browser: what the page carries and the
code that draws its memory columns, footprint chart and leaks card (tests/browser draws it)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from spyglass.profile_model import queries as proc
from spyglass.profile_model.diffing import diff_profiles
from spyglass.reporters.diff_html import render_diff_html
from spyglass.reporters.html import SCRIPTS, render_html, view_hints
from spyglass.reporters.page_data import unpack

ASSETS = Path(__file__).resolve().parents[2] / "src" / "spyglass" / "reporters" / "html_assets"
DEMO = "/home/ada/memdemo/mem_demo.py"
ISLAND = re.compile(r'<script type="application/json" id="([a-z-]+)">(.*?)</script>', re.S)


def islands(page: str) -> dict[str, Any]:
    return {name: unpack(json.loads(text)) for name, text in ISLAND.findall(page)}


def code() -> str:
    return "\n".join((ASSETS / name).read_text(encoding="utf-8") for name in SCRIPTS)


def test_the_page_carries_the_memory_figures(mem: dict[str, Any]) -> None:
    data = islands(render_html(copy.deepcopy(mem)))
    profile = data["profile-data"]
    assert profile == mem
    assert profile["memory_profiled"] is True
    assert len(profile["footprint_timeline"]) == len(mem["footprint_timeline"]) > 10
    assert profile["files"][DEMO]["leaks"][0]["lineno"] == 13


def test_lines_that_matter_include_memory_and_leaks(mem: dict[str, Any]) -> None:
    hints = view_hints(mem)
    # 24 only allocated; 13 is a leak with little CPU; 18 and 22 matter for nothing.
    assert hints["matter"][DEMO] == [8, 9, 10, 13, 17, 24, 28]
    always = {(r.path, r.lineno) for r in proc.lines_that_matter(mem, 5)}
    for path, linenos in hints["matter"].items():
        chosen = proc.select_lines(mem, path, always=always)
        assert linenos == [int(x["lineno"]) for x in chosen]


def test_memory_script_is_bundled_before_the_report(mem: dict[str, Any]) -> None:
    assert SCRIPTS.index("tables.js") < SCRIPTS.index("memory.js") < SCRIPTS.index("report.js")
    assert "/* ---- memory.js ---- */" in render_html(mem)


def test_the_report_draws_memory_only_for_memory_profiles() -> None:
    report = (ASSETS / "report.js").read_text(encoding="utf-8")
    assert (
        "mem: profile.memory_profiled === true ? { elapsed: num(profile.elapsed_s) } : null"
        in report
    )
    assert (
        "if (ctx.mem) body.append(memoryCard(profile, ctx), leaksCard(profile, ctx.anchorOf));"
        in report
    )
    memory_js = (ASSETS / "memory.js").read_text(encoding="utf-8")
    # SVG through the DOM, with attributes only: the CSP forbids style attributes.
    assert 'const SVG_NS = "http://www.w3.org/2000/svg";' in memory_js
    assert "createElementNS(SVG_NS" in memory_js
    assert ".style." not in memory_js and 'setAttribute("style"' not in memory_js
    for name in ("footprintChart", "sparkSvg", "leaksCard", "memoryColumns"):
        assert f"function {name}(" in memory_js


def test_no_memory_placeholders_left_for_cpu_profiles() -> None:
    # Version 1 pages guessed at byte-sized memory fields; version 2 records MB.
    assert "mem_alloc_bytes" not in code() and "copy_bytes" not in code()


def test_the_diff_page_carries_memory_changes(mem: dict[str, Any]) -> None:
    after = copy.deepcopy(mem)
    after["mem_alloc_mb"] += 10.0
    page = render_diff_html(diff_profiles(mem, after), mem, after)
    doc = islands(page)["diff-data"]
    assert doc["total"]["mem_delta_mb"] == 10.0
    diff_js = (ASSETS / "diff.js").read_text(encoding="utf-8")
    assert 'label: "Δ memory"' in diff_js
