"""The HTML report in a real browser: headless Chromium driven by Selenium.

Needs ``pip install selenium`` and Chromium with its driver (Debian: ``apt-get install
chromium chromium-driver``). Without them every test here skips, saying what is missing;
with SPYGLASS_REQUIRE_BROWSER=1 (set it in CI) a missing piece fails the tests instead.
SPYGLASS_CHROME and SPYGLASS_CHROMEDRIVER point at other binaries.

Pages are loaded from file://. Each load checks that the console stayed free of errors and
that the page requested nothing but itself. Screenshots (light, dark, narrow, hostile) go to
the directory in SPYGLASS_ARTIFACTS (default: a temporary directory), next to the pages.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from spyglass.reporters.html import HtmlReporter

# Drives a headless Chromium (-m "not browser" leaves the tier out).
pytestmark = pytest.mark.browser

try:
    from selenium import webdriver
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # the tests skip (see the driver fixture)
    webdriver = None

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOAD_TIMEOUT_S = 20
WIDE, NARROW = 1280, 400

Driver = Any


def load_fixture(name: str) -> dict[str, Any]:
    with open(FIXTURES / name, encoding="utf-8") as fh:
        profile: dict[str, Any] = json.load(fh)
    return profile


def page_for(name: str, artifacts: Path, profile: dict[str, Any] | None = None) -> Path:
    if profile is None:
        profile = load_fixture(name)
    page = artifacts / (Path(name).stem + ".html")
    HtmlReporter().write(profile, page)
    return page


class Loaded:
    """A page after loading: what it logged and what it requested."""

    def __init__(self, drv: Driver, url: str) -> None:
        self.url = url
        self.console = drv.get_log("browser")
        self.requests = []
        for entry in drv.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                self.requests.append(message["params"]["request"]["url"])
        self.resources = drv.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )

    def check_clean(self) -> None:
        errors = [e for e in self.console if e.get("level") in ("SEVERE", "ERROR")]
        assert not errors, f"console errors: {errors}"
        others = [u for u in self.requests if u != self.url and not u.startswith("data:")]
        assert not others, f"the page made requests: {others}"
        assert self.resources == []


def load(drv: Driver, page: Path, *, scheme: str = "light", width: int = WIDE) -> Loaded:
    drv.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": scheme}]},
    )
    # Headless Chrome will not make its window narrower than 500 px; emulate the viewport.
    drv.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
    )
    drv.get_log("browser")
    drv.get_log("performance")
    url = page.as_uri()
    drv.get(url)
    try:
        WebDriverWait(drv, LOAD_TIMEOUT_S).until(
            lambda d: d.execute_script("return document.documentElement.dataset.ready") == "true"
        )
    except Exception:
        pytest.fail(f"the report never finished drawing; console: {drv.get_log('browser')}")
    return Loaded(drv, url)


def screenshot(drv: Driver, path: Path) -> Path:
    """The whole page (not just the viewport) as a PNG."""
    size = drv.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 16000)}
    shot = drv.execute_cdp_cmd(
        "Page.captureScreenshot",
        {"format": "png", "captureBeyondViewport": True, "clip": {**clip, "scale": 1}},
    )
    path.write_bytes(base64.b64decode(shot["data"]))
    assert path.stat().st_size > 10_000
    return path


def js(drv: Driver, script: str, *args: Any) -> Any:
    return drv.execute_script(script, *args)


def resize_section(drv: Driver) -> Any:
    return drv.find_element(By.CSS_SELECTOR, 'section.file[data-path$="/imgtool/resize.py"]')


def line_numbers(section: Any) -> list[int]:
    cells = section.find_elements(
        By.CSS_SELECTOR, "table[data-table=lines] tbody tr:not(.gap) td:first-child"
    )
    return [int(c.text) for c in cells]


# --------------------------------------------------------------------------- tests


def test_multifile_report_renders_offline(driver: Driver, artifacts: Path) -> None:
    loaded = load(driver, page_for("cpu_multifile.json", artifacts))
    loaded.check_clean()
    count = lambda sel: len(driver.find_elements(By.CSS_SELECTOR, sel))  # noqa: E731
    # The two ThreadPoolExecutor-0_N threads are one row, which expands to show each.
    assert count("table[data-table=threads] tbody tr") == 3
    driver.find_element(By.CSS_SELECTOR, "table[data-table=threads] .expander").click()
    assert count("table[data-table=threads] tbody tr") == 5
    assert count("table[data-table=threads] tbody tr.child") == 2
    assert count("table[data-table=files] tbody tr") == 5
    assert count("table[data-table=hottest] tbody tr") == 5
    assert count("section.file") == 5
    assert count("table[data-table=lines]") == 5
    assert count("table[data-table=functions]") == 5
    assert count("[data-flame] .fg-frame") > 10
    assert driver.find_element(By.TAG_NAME, "h1").text == "-m imgtool resize --width 640 photos/"
    assert "resize.py" in resize_section(driver).find_element(By.TAG_NAME, "h2").text
    assert line_numbers(resize_section(driver)) == [30, 31, 32, 33, 50]
    # Figures from fewer than 10 samples are marked, with their spread in the title.
    rough = driver.find_elements(By.CSS_SELECTOR, ".rough")
    assert rough
    for mark in rough:
        assert mark.text.startswith("~") and "±" in mark.get_attribute("title")
    screenshot(driver, artifacts / "report-light.png")


def test_clicking_a_header_sorts(driver: Driver, artifacts: Path) -> None:
    load(driver, page_for("cpu_multifile.json", artifacts)).check_clean()
    section = resize_section(driver)
    cpu = section.find_element(By.CSS_SELECTOR, 'table[data-table=lines] button[data-key="cpu"]')
    cpu.click()
    assert line_numbers(section) == [32, 33, 31, 30, 50]
    header = cpu.find_element(By.XPATH, "..")
    assert header.get_attribute("aria-sort") == "descending"
    cpu.click()
    assert line_numbers(section) == [50, 30, 31, 33, 32]
    assert header.get_attribute("aria-sort") == "ascending"
    # Keyboard: the headers are buttons.
    line = section.find_element(By.CSS_SELECTOR, 'table[data-table=lines] button[data-key="line"]')
    line.send_keys(Keys.ENTER)
    assert line_numbers(section) == [30, 31, 32, 33, 50]
    line.send_keys(Keys.SPACE)
    assert line_numbers(section) == [50, 33, 32, 31, 30]
    assert header.get_attribute("aria-sort") is None


def test_toggle_between_lines_that_matter_and_all(driver: Driver, artifacts: Path) -> None:
    load(driver, page_for("cpu_multifile.json", artifacts)).check_clean()
    section = resize_section(driver)
    section.find_element(By.CSS_SELECTOR, 'button[data-lines="all"]').click()
    assert len(line_numbers(section)) == 13
    assert not section.find_element(By.CSS_SELECTOR, ".more").is_displayed()
    section.find_element(By.CSS_SELECTOR, 'button[data-lines="matter"]').click()
    assert line_numbers(section) == [30, 31, 32, 33, 50]
    assert "8 more lines below 1%" in section.find_element(By.CSS_SELECTOR, ".more").text


def frame_width(drv: Driver, node: str) -> float:
    return float(
        js(
            drv,
            "return document.querySelector(`[data-node='${arguments[0]}']`)"
            ".getBoundingClientRect().width",
            node,
        )
    )


def test_clicking_a_flame_frame_zooms(driver: Driver, artifacts: Path) -> None:
    load(driver, page_for("cpu_multifile.json", artifacts)).check_clean()
    box = driver.find_element(By.CSS_SELECTOR, "[data-flame]")
    full = float(js(driver, "return arguments[0].getBoundingClientRect().width", box))
    narrow = [
        f
        for f in box.find_elements(By.CSS_SELECTOR, ".fg-frame:not(.root)")
        if 40 < f.rect["width"] < full * 0.5
    ]
    assert narrow, "no frame narrow enough to zoom into"
    frame = narrow[0]
    node = frame.get_attribute("data-node")
    before = frame_width(driver, node)

    ActionChains(driver).move_to_element(frame).perform()
    tip = driver.find_element(By.ID, "flame-tip")
    assert tip.is_displayed()
    assert frame.get_attribute("aria-label").split(",")[0] in tip.text
    assert "CPU" in tip.text and "samples" in tip.text

    frame.click()
    assert abs(frame_width(driver, node) - full) <= 1.5
    reset = driver.find_element(By.CSS_SELECTOR, '[data-action="zoom-reset"]')
    assert reset.is_enabled()
    assert box.find_elements(By.CSS_SELECTOR, ".fg-frame.ancestor")

    box.find_element(By.CSS_SELECTOR, ".fg-frame.root").click()
    assert abs(frame_width(driver, node) - before) <= 1.5
    assert not reset.is_enabled()

    # Keyboard: the root takes focus, arrows move, Enter zooms, Escape zooms out.
    root = box.find_element(By.CSS_SELECTOR, ".fg-frame.root")
    root.send_keys(Keys.ARROW_DOWN)
    focused = driver.switch_to.active_element
    child = focused.get_attribute("data-node")
    assert child not in (None, root.get_attribute("data-node"))
    focused.send_keys(Keys.ARROW_DOWN, Keys.ARROW_DOWN, Keys.ARROW_DOWN)
    deep = driver.switch_to.active_element.get_attribute("data-node")
    deep_before = frame_width(driver, deep)
    driver.switch_to.active_element.send_keys(Keys.ENTER)
    assert abs(frame_width(driver, deep) - full) <= 1.5
    driver.switch_to.active_element.send_keys(Keys.ESCAPE)
    assert abs(frame_width(driver, deep) - deep_before) <= 1.5


def test_flame_width_can_include_wait(driver: Driver, artifacts: Path) -> None:
    load(driver, page_for("cpu_multifile.json", artifacts)).check_clean()
    box = driver.find_element(By.CSS_SELECTOR, "[data-flame]")
    # The main thread mostly waited, in resize_all at line 50: that frame has little CPU.
    waiting = '.fg-frame[aria-label^="resize_all, /home/ada/src/imgtool/imgtool/resize.py:50"]'
    root = box.find_element(By.CSS_SELECTOR, ".fg-frame.root")
    assert box.find_element(By.CSS_SELECTOR, waiting).rect["width"] < 0.05 * root.rect["width"]
    driver.find_element(By.CSS_SELECTOR, 'button[data-metric="cpu+wait"]').click()
    root = box.find_element(By.CSS_SELECTOR, ".fg-frame.root")
    assert "CPU + wait" in root.text
    frame = box.find_element(By.CSS_SELECTOR, waiting)
    assert frame.rect["width"] > 0.2 * root.rect["width"]
    driver.find_element(By.CSS_SELECTOR, 'button[data-metric="cpu"]').click()
    root = box.find_element(By.CSS_SELECTOR, ".fg-frame.root")
    assert box.find_element(By.CSS_SELECTOR, waiting).rect["width"] < 0.05 * root.rect["width"]


def test_dark_and_narrow(driver: Driver, artifacts: Path) -> None:
    page = page_for("cpu_multifile.json", artifacts)
    load(driver, page, scheme="dark").check_clean()
    background = js(driver, "return getComputedStyle(document.body).backgroundColor")
    red, green, blue = (int(x) for x in background[background.index("(") + 1 : -1].split(",")[:3])
    assert red + green + blue < 3 * 64, background
    screenshot(driver, artifacts / "report-dark.png")

    load(driver, page, width=NARROW).check_clean()
    widths = js(
        driver,
        "const e = document.documentElement; return [e.clientWidth, e.scrollWidth,"
        " Math.max(...[...document.querySelectorAll('.table-wrap')]"
        ".map(w => w.scrollWidth - w.clientWidth))]",
    )
    assert widths[0] <= NARROW and widths[1] <= widths[0], f"the page itself scrolls: {widths}"
    assert widths[2] > 0, "wide tables should scroll inside their frame"
    screenshot(driver, artifacts / "report-narrow.png")


def test_hostile_profile_runs_nothing(driver: Driver, artifacts: Path) -> None:
    loaded = load(driver, page_for("hostile.json", artifacts))
    loaded.check_clean()
    # Hover and focus everything that could carry a handler.
    for frame in driver.find_elements(By.CSS_SELECTOR, ".fg-frame")[:10]:
        ActionChains(driver).move_to_element(frame).perform()
    assert js(driver, "return typeof window.__pwned") == "undefined"
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018
    assert js(driver, "return document.scripts.length") == 3
    assert js(driver, "return document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert js(driver, "return document.querySelectorAll('[onerror], [onmouseover]').length") == 0
    text = js(driver, "return document.body.textContent")
    assert "</script><script>window.__pwned=1;alert(1)</script>" in text
    assert '<img src=x onerror="window.__pwned=2;alert(2)">' in text
    assert "line\u2028sep\u2029para" in text
    assert js(driver, "return document.title").startswith("spyglass · </script><script>")
    screenshot(driver, artifacts / "report-hostile.png")
    loaded = Loaded(driver, loaded.url)
    loaded.check_clean()


def test_small_and_empty_profiles(driver: Driver, artifacts: Path) -> None:
    load(driver, page_for("cpu_simple.json", artifacts)).check_clean()
    assert driver.find_elements(By.CSS_SELECTOR, "table[data-table=lines] tbody tr")
    with open(FIXTURES / "cpu_simple.json", encoding="utf-8") as fh:
        empty = dict(json.load(fh), files={}, frames=[], stacks=[], threads=[], samples=0)
    load(driver, page_for("empty.json", artifacts, empty)).check_clean()
    assert "No samples landed" in driver.find_element(By.TAG_NAME, "main").text


def test_page_from_spyglass_view_renders_offline(driver: Driver, artifacts: Path) -> None:
    # The page as the command line writes it: `spyglass view --html -o FILE PROFILE`.
    from spyglass.cli import view

    page = artifacts / "view-cpu_simple.html"
    assert view.main(["--html", "-o", str(page), str(FIXTURES / "cpu_simple.json")]) == 0
    load(driver, page).check_clean()
    assert driver.find_element(By.TAG_NAME, "h1").text == "simple.py"
    assert driver.find_elements(By.CSS_SELECTOR, "section.file")


def test_memory_report_draws_its_columns_chart_and_leaks(driver: Driver, artifacts: Path) -> None:
    load(driver, page_for("mem_simple.json", artifacts)).check_clean()
    section = driver.find_element(By.CSS_SELECTOR, 'section.file[data-path$="/mem_demo.py"]')
    lines = section.find_element(By.CSS_SELECTOR, "table[data-table=lines]")
    heads = [b.get_attribute("data-key") for b in lines.find_elements(By.CSS_SELECTOR, "th button")]
    assert heads[-5:] == ["mem", "peak", "timeline", "copy", "source"]
    # Line 24 only allocated: it has a row, with its memory and a sparkline.
    assert line_numbers(section) == [8, 9, 10, 13, 17, 24, 28]
    row = section.find_element(By.ID, "file-1-L17")
    assert "671 MB" in row.text and "98% py" in row.text and "160 MB/s" in row.text
    spark = row.find_element(By.CSS_SELECTOR, "td.spark-col svg.spark path.spark-line")
    assert spark.get_attribute("d").count("H") > 5
    assert len(section.find_elements(By.CSS_SELECTOR, "svg.spark")) == 4 + 4  # lines, functions
    lines.find_element(By.CSS_SELECTOR, 'button[data-key="mem"]').click()
    assert line_numbers(section) == [17, 8, 13, 24, 9, 10, 28]
    # The footprint chart, with its maximum and where it was reached.
    chart = driver.find_element(By.CSS_SELECTOR, "figure[data-chart=footprint]")
    line = chart.find_element(By.CSS_SELECTOR, "svg.fp-svg path.fp-line")
    assert line.get_attribute("d").count("V") >= len(
        load_fixture("mem_simple.json")["footprint_timeline"]
    )
    box = js(driver, "return arguments[0].getBoundingClientRect()", line)
    assert box["width"] > 600 and box["height"] > 100
    assert "max 333 MB at mem_demo.py:17" in chart.find_element(By.TAG_NAME, "figcaption").text
    kpis = driver.find_element(By.CSS_SELECTOR, "[data-kpis=memory]").text
    assert "333 MB" in kpis and "996 MB" in kpis and "82% py" in kpis and "162 MB/s" in kpis
    assert "25.2 MB" in kpis  # native threads (24 * 2^20 bytes)
    leaks = driver.find_elements(By.CSS_SELECTOR, "#leaks table[data-table=leaks] tbody tr")
    assert [r.text.split()[:4] for r in leaks] == [["mem_demo.py:13", "98.1%", "18.2", "MB/s"]]
    screenshot(driver, artifacts / "report-memory.png")


def test_cpu_report_has_no_memory_parts(driver: Driver, artifacts: Path) -> None:
    load(driver, page_for("cpu_simple.json", artifacts)).check_clean()
    for selector in ("#leaks", "figure[data-chart]", "svg", "[data-kpis=memory]", ".mem-col"):
        assert not driver.find_elements(By.CSS_SELECTOR, selector), selector


def test_gpu_report_has_its_columns_and_card(driver: Driver, artifacts: Path) -> None:
    from gpu_shapes import with_gpu

    profile = with_gpu(load_fixture("cpu_simple.json"), per_process=False)
    load(driver, page_for("gpu_simple.json", artifacts, profile)).check_clean()
    section = driver.find_element(By.CSS_SELECTOR, "section.file")
    lines = section.find_element(By.CSS_SELECTOR, "table[data-table=lines]")
    heads = [b.get_attribute("data-key") for b in lines.find_elements(By.CSS_SELECTOR, "th button")]
    assert heads[-3:] == ["gpu", "gpumem", "source"]
    card = driver.find_element(By.ID, "gpu")
    assert "Test GPU" in card.text and "whole device" in card.text
    line = card.find_element(By.CSS_SELECTOR, "figure[data-chart=gpu-memory] path.fp-line")
    assert line.get_attribute("d").count("V") >= 2
    screenshot(driver, artifacts / "report-gpu.png")


def _test_entry(nodeid: str, cpu_s: float, outcome: str = "passed", **extra: Any) -> dict[str, Any]:
    """One entry of a `pytest --spyglass` profile's tests list, as the plugin writes it."""
    return {
        "nodeid": nodeid,
        "outcome": outcome,
        "elapsed_s": cpu_s + 0.1,
        "cpu_python_s": cpu_s * 0.75,
        "cpu_native_s": cpu_s * 0.25,
        "cpu_system_s": 0.0,
        "wait_s": 0.1,
        "samples": int(cpu_s * 100),
        "mem_alloc_mb": 64.0 * cpu_s,
        "max_footprint_mb": 8.0,
        "copy_mb": 1.0,
        **extra,
    }


def test_a_test_suites_report_has_its_per_test_table(driver: Driver, artifacts: Path) -> None:
    profile = load_fixture("mem_simple.json")
    profile["tests"] = [
        _test_entry("test_io.py::test_small", 0.2),
        _test_entry("test_io.py::test_parse_big_file", 1.5, "failed", over=["cpu_s"]),
        _test_entry("test_io.py::test_medium", 0.6, worker="gw1"),
    ]
    load(driver, page_for("suite.json", artifacts, profile)).check_clean()
    rows = driver.find_elements(By.CSS_SELECTOR, "table[data-table=tests] tbody tr")
    names = [r.find_element(By.CSS_SELECTOR, "td:first-child").text for r in rows]
    # Every test, the heaviest first (by CPU, as the terminal's breakdown).
    assert names == [
        "test_io.py::test_parse_big_file",
        "test_io.py::test_medium",
        "test_io.py::test_small",
    ]
    assert "failed (over cpu_s)" in rows[0].text
    assert "gw1" in rows[1].text
    heads = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "#tests thead th")]
    assert {"test", "outcome", "CPU", "allocated", "peak", "copied", "worker"} <= set(heads)
    # A profile that is no test suite's has no such table.
    load(driver, page_for("mem_simple.json", artifacts)).check_clean()
    assert not driver.find_elements(By.CSS_SELECTOR, "#tests")


def test_an_attached_profile_says_what_its_memory_counts(driver: Driver, artifacts: Path) -> None:
    profile = dict(load_fixture("mem_simple.json"), attached=True)
    load(driver, page_for("attached.json", artifacts, profile)).check_clean()
    facts = driver.find_element(By.CSS_SELECTOR, "header .facts").text
    assert "memory counts only what it allocated since" in facts


def test_cuda_copies_have_their_column_and_card(driver: Driver, artifacts: Path) -> None:
    profile = load_fixture("mem_simple.json")
    profile.update(cuda_htod_mb=300.0, cuda_dtoh_mb=20.0, cuda_dtod_mb=0.0)
    entry = next(iter(profile["files"].values()))
    entry["lines"][0].update(cuda_htod_mb=300.0, cuda_dtoh_mb=20.0, cuda_dtod_mb=0.0)
    load(driver, page_for("cuda_copies.json", artifacts, profile)).check_clean()
    lines = driver.find_element(By.CSS_SELECTOR, "section.file table[data-table=lines]")
    heads = [b.get_attribute("data-key") for b in lines.find_elements(By.CSS_SELECTOR, "th button")]
    assert heads[-2:] == ["gpucopy", "source"], heads
    card = driver.find_element(By.ID, "gpu")
    assert "GPU copies" in card.text and "host \u2192 gpu" in card.text.lower(), card.text
    assert "315 MB" in card.text, card.text  # 300 MB of 2^20 bytes, shown in 10^6
    screenshot(driver, artifacts / "report-cuda-copies.png")
