"""Native functions in the HTML report, in headless Chromium (see test_html_in_chromium.py
for what is needed): the row under a line's source, the run's native functions card, and
native frames below the Python frames in the flame graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_html_in_chromium import WIDE, js, load, load_fixture, page_for, screenshot

try:
    from selenium.webdriver.common.by import By
except ImportError:  # the driver fixture skips
    By = None

Driver = Any


def test_native_functions_show_under_lines_in_a_card_and_in_the_flame(
    driver: Driver, artifacts: Path
) -> None:
    load(driver, page_for("cpu_native.json", artifacts), width=WIDE).check_clean()
    under = driver.find_elements(By.CSS_SELECTOR, "section.file .native-under")
    assert under, "no native row under any line"
    texts = [u.text for u in under]
    assert any("list_sort_impl" in t and "55%" in t for t in texts), texts
    title = under[0].get_attribute("title")
    assert "libpython3.11.so.1.0" in title  # every function, with its library, in the tooltip

    rows = driver.find_elements(By.CSS_SELECTOR, "table[data-table=native-functions] tbody tr")
    assert len(rows) == 6
    assert "list_sort_impl" in rows[0].text and "simple.py:9" in rows[0].text
    link = rows[0].find_element(By.CSS_SELECTOR, "a")
    assert link.get_attribute("href").endswith("-L9")

    natives = driver.find_elements(By.CSS_SELECTOR, "[data-flame] .fg-frame.native")
    assert natives, "no native frame in the flame graph"
    labels = [n.get_attribute("aria-label") or "" for n in natives]
    assert any("list_sort_impl" in x for x in labels), labels
    # A native frame is narrower than the Python frame above it.
    widths = js(
        driver,
        "return Array.from(document.querySelectorAll('[data-flame] .fg-frame.native'))"
        ".map(e => e.getBoundingClientRect().width)",
    )
    full = js(driver, "return document.querySelector('[data-flame]').getBoundingClientRect().width")
    assert max(widths) < full
    screenshot(driver, artifacts / "native.png")


def test_native_callers_stack_between_the_python_frame_and_the_function(
    driver: Driver, artifacts: Path
) -> None:
    profile = load_fixture("cpu_native.json")
    for stack in profile["stacks"]:
        for entry in stack.get("native", []):
            if entry["name"] == "list_sort_impl":
                entry["callers"] = [{"name": "builtin_sorted", "library": "libpython3.11.so.1.0"}]
    page = page_for("cpu_native_callers.json", artifacts, profile)
    load(driver, page, width=WIDE).check_clean()
    natives = driver.find_elements(By.CSS_SELECTOR, "[data-flame] .fg-frame.native")
    boxes = {
        label: n.rect
        for n in natives
        for label in [n.get_attribute("aria-label") or ""]
        if "builtin_sorted" in label or "list_sort_impl" in label
    }
    caller = next(r for k, r in boxes.items() if "builtin_sorted" in k)
    callee = next(r for k, r in boxes.items() if "list_sort_impl" in k)
    # The callee sits in the row below its caller (the flame grows downwards or upwards,
    # but never puts them on one row), within its caller's span.
    assert callee["y"] != caller["y"]
    assert caller["x"] - 1 <= callee["x"] <= caller["x"] + caller["width"] + 1
    screenshot(driver, artifacts / "native_callers.png")
