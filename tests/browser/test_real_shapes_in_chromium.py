"""The HTML report of profiles shaped like real programs' (tests/profile_shapes.py), in
headless Chromium at 1280 px: a 600-thread server, a 2,000-frame-deep recursion under a
tower of imports, and a run through 25 files.

What a reader sees first must be the hottest lines with their whole source; threads named
alike are one row; the flame graph keeps a bounded height, folds deep towers and the
import machinery, and finds frames by name. Screenshots of the three shapes go to
SPYGLASS_ARTIFACTS (see conftest.py). The render time is printed, never asserted.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from test_html_in_chromium import WIDE, js, load, screenshot

from profile_shapes import (
    LIB_HOT,
    LONG_HOT_LINE,
    library_profile,
    server_profile,
    tower_profile,
)
from spyglass.reporters.html import HtmlReporter

# Drives a headless Chromium (-m "not browser" leaves the tier out).
pytestmark = pytest.mark.browser

try:
    from selenium.webdriver.common.by import By
except ImportError:  # the tests skip (see the driver fixture)
    By = None

Driver = Any
MAX_PAGE_BYTES = 300_000
VIEWPORT_H = 900


def _page(artifacts: Path, name: str, profile: dict[str, Any]) -> Path:
    page = artifacts / f"{name}.html"
    HtmlReporter().write(profile, page)
    return page


def _timed_load(driver: Driver, page: Path) -> None:
    started = time.perf_counter()
    load(driver, page).check_clean()
    print(
        f"{page.name}: {page.stat().st_size} bytes, drawn in {time.perf_counter() - started:.2f} s"
    )


def _hottest_source_cell(driver: Driver, source: str) -> Any:
    cells = driver.find_elements(By.CSS_SELECTOR, "table[data-table=hottest] td.src")
    match = [c for c in cells if c.get_attribute("textContent") == source.strip()]
    assert match, [c.get_attribute("textContent") for c in cells]
    return match[0]


def _assert_hottest_on_top(driver: Driver, source: str) -> None:
    first = driver.find_element(By.CSS_SELECTOR, "main > section")
    assert first.get_attribute("aria-labelledby") == "hot-h"
    cell = _hottest_source_cell(driver, source)
    top = js(driver, "return arguments[0].getBoundingClientRect().bottom", cell)
    assert top < VIEWPORT_H, "the hottest line is not in the first screen"
    # Nothing hidden: the cell shows all of its text (wrapped if it must), no scrollbar.
    overflow = js(
        driver,
        "const c = arguments[0]; const w = c.closest('.table-wrap');"
        "return [c.scrollWidth - c.clientWidth, w.scrollWidth - w.clientWidth]",
        cell,
    )
    assert overflow == [0, 0], overflow


@pytest.fixture(scope="module")
def server_page(artifacts: Path) -> Path:
    return _page(artifacts, "shape-server", server_profile())


def test_server_page_is_small_and_starts_with_the_hottest_lines(
    driver: Driver, artifacts: Path, server_page: Path
) -> None:
    assert server_page.stat().st_size < MAX_PAGE_BYTES
    _timed_load(driver, server_page)
    _assert_hottest_on_top(driver, LONG_HOT_LINE)
    screenshot(driver, artifacts / "shape-server.png")


def test_server_threads_are_grouped_and_expand(driver: Driver, server_page: Path) -> None:
    load(driver, server_page).check_clean()
    rows = driver.find_elements(By.CSS_SELECTOR, "table[data-table=threads] tbody tr")
    names = [r.find_element(By.CSS_SELECTOR, "td").text.strip(" ▸▾\n") for r in rows]
    assert names == ["Thread-N (process_request_thread)", "Thread-N (client)", "MainThread"]
    assert "×600" in rows[0].text
    height = js(driver, "return document.querySelector('#threads').offsetHeight")
    assert height < 400, "the threads card is taller than its three rows need"
    rows[0].find_element(By.CSS_SELECTOR, ".expander").click()
    children = driver.find_elements(By.CSS_SELECTOR, "table[data-table=threads] tr.child")
    assert len(children) == 600
    assert all("(process_request_thread)" in c.text for c in children[:5])


def test_server_threads_ungrouped(driver: Driver, artifacts: Path) -> None:
    from spyglass.reporters.html import render_html

    page = artifacts / "shape-server-each.html"
    page.write_text(render_html(server_profile(), group_threads=False), encoding="utf-8")
    load(driver, page).check_clean()
    rows = driver.find_elements(By.CSS_SELECTOR, "table[data-table=threads] tbody tr")
    assert len(rows) == 609


def test_deep_tower_is_folded(driver: Driver, artifacts: Path) -> None:
    page = _page(artifacts, "shape-tower", tower_profile())
    _timed_load(driver, page)
    box = driver.find_element(By.CSS_SELECTOR, "[data-flame]")
    assert box.size["height"] <= 30 * 22, "the flame graph is taller than its cap"
    labels = [
        f.get_attribute("aria-label") or "" for f in box.find_elements(By.CSS_SELECTOR, ".fg-frame")
    ]
    assert not [x for x in labels if x.startswith("_find_and_load")]
    assert [x for x in labels if x.startswith("import (import machinery folded)")]
    # One root: every outermost frame hangs under "all stacks".
    assert len(box.find_elements(By.CSS_SELECTOR, ".fg-frame.root")) == 1
    screenshot(driver, artifacts / "shape-tower.png")

    folds = box.find_elements(By.CSS_SELECTOR, ".fg-frame.fold")
    depth = {int(f.text.split()[1]): f for f in folds}
    assert max(depth) > 100  # the recursion's 128 recorded frames, less those drawn
    fold = depth[max(depth)]
    fold.click()
    box = driver.find_element(By.CSS_SELECTOR, "[data-flame]")
    assert box.size["height"] <= 30 * 22
    assert driver.find_element(By.CSS_SELECTOR, '[data-action="zoom-reset"]').is_enabled()

    driver.find_element(By.CSS_SELECTOR, '[data-action="imports"]').click()
    labels = [
        f.get_attribute("aria-label") or "" for f in box.find_elements(By.CSS_SELECTOR, ".fg-frame")
    ]
    assert [x for x in labels if x.startswith("_find_and_load")]


def test_flame_search_highlights(driver: Driver, artifacts: Path) -> None:
    page = _page(artifacts, "shape-tower", tower_profile())
    load(driver, page).check_clean()
    search = driver.find_element(By.CSS_SELECTOR, '[data-action="search"]')
    search.send_keys("walk")
    matched = driver.find_elements(By.CSS_SELECTOR, ".fg-frame.match")
    assert matched and all(m.get_attribute("aria-label").startswith("walk") for m in matched)
    assert driver.find_elements(By.CSS_SELECTOR, ".fg-frame.unmatched")
    found = driver.find_element(By.CSS_SELECTOR, ".fg-found").text
    assert "% of the graph" in found
    search.clear()
    search.send_keys("no-such-function")
    assert driver.find_element(By.CSS_SELECTOR, ".fg-found").text == "no frame matches"


def test_library_run_shows_the_whole_hot_line(driver: Driver, artifacts: Path) -> None:
    page = _page(artifacts, "shape-library", library_profile())
    _timed_load(driver, page)
    assert js(driver, "return window.innerWidth") == WIDE
    _assert_hottest_on_top(driver, LIB_HOT)
    files = driver.find_elements(By.CSS_SELECTOR, "table[data-table=files] tbody tr")
    assert len(files) == 25
    # The run started long before this test: the page says how old it is.
    facts = driver.find_element(By.CSS_SELECTOR, "header .facts").text
    assert "started 2025-11-24 16:00 UTC (" in facts and " days ago)" in facts
    screenshot(driver, artifacts / "shape-library.png")


def test_memory_profile_leaves_the_source_its_room(driver: Driver, artifacts: Path) -> None:
    # Memory columns would crowd the source out of the hottest lines: the overview tables
    # carry only CPU, wait and memory, the file cards the rest.
    import json

    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "mem_simple.json"
    profile = json.loads(fixture.read_text(encoding="utf-8"))
    load(driver, _page(artifacts, "mem-overview", profile)).check_clean()
    cells = driver.find_elements(By.CSS_SELECTOR, "table[data-table=hottest] td.src")
    assert cells
    for cell in cells:
        source = cell.get_attribute("textContent")
        _assert_hottest_on_top(driver, source)
    for name in ("hottest", "top-functions"):
        wrap = driver.find_element(By.CSS_SELECTOR, f"table[data-table={name}]")
        overflow = js(
            driver, "const w = arguments[0].parentNode; return w.scrollWidth - w.clientWidth", wrap
        )
        assert overflow == 0, name


def test_call_tree_folds_the_tower(driver: Driver, artifacts: Path) -> None:
    load(driver, _page(artifacts, "shape-tower", tower_profile())).check_clean()
    tree = driver.find_element(By.CSS_SELECTOR, "[data-tree]")
    calls = tree.find_elements(By.CSS_SELECTOR, "li")
    assert len(calls) < 20  # 128 recorded frames of recursion are not 128 rows
    folds = [f.text for f in tree.find_elements(By.CSS_SELECTOR, ".t-fold")]
    assert any(f.startswith("⋮ 126 calls: walk") for f in folds), folds
    top = tree.find_element(By.CSS_SELECTOR, "details > summary")
    assert top.text.split()[0] == "100%"
    # The calls are disclosure widgets: a click closes one, and its callees go out of sight.
    first = tree.find_element(By.CSS_SELECTOR, "details")
    assert first.get_attribute("open") is not None
    top.click()
    assert first.get_attribute("open") is None
    assert not tree.find_element(By.CSS_SELECTOR, "li li").is_displayed()
