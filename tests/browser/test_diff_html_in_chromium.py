"""The diff page (``spyglass diff --format html``) in a real browser: headless Chromium
driven by Selenium, as in test_html_in_chromium.py.

Needs ``pip install selenium`` and Chromium with its driver (Debian: ``apt-get install
chromium chromium-driver``); without them every test here skips, unless
SPYGLASS_REQUIRE_BROWSER=1 makes a missing piece fail them. SPYGLASS_CHROME and
SPYGLASS_CHROMEDRIVER point at other binaries; screenshots go to SPYGLASS_ARTIFACTS (default:
a temporary directory). Every load checks that the console stayed free of errors and that
the page requested nothing but itself.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from spyglass.cli.diff import main as diff_main
from spyglass.profile_model import queries as proc

# Drives a headless Chromium (-m "not browser" leaves the tier out).
pytestmark = pytest.mark.browser

try:
    from selenium import webdriver
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # the tests skip (see the driver fixture)
    webdriver = None  # type: ignore[assignment]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SIMPLE = "/home/ada/demo/simple.py"
EVIL = "/home/eve/</script><script>window.__pwned=1;alert(1)</script>/evil.py"
CPU = ("cpu_python_s", "cpu_native_s", "cpu_system_s")
LOAD_TIMEOUT_S = 20

Driver = Any


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


def diff_page(artifacts: Path, fixture: str, path: str, slow: list[tuple[int, int]]) -> Path:
    """The page ``spyglass diff --format html`` writes for ``fixture`` against a copy of
    it whose lines ``slow`` (line number, extra samples) of ``path`` take twice as long."""
    with open(FIXTURES / fixture, encoding="utf-8") as fh:
        before = json.load(fh)
    after = before
    for lineno, more in slow:
        after = slowed(after, path, lineno, 2.0, more)
    stem = Path(fixture).stem
    (artifacts / f"{stem}-before.json").write_text(json.dumps(before), encoding="utf-8")
    (artifacts / f"{stem}-after.json").write_text(json.dumps(after), encoding="utf-8")
    argv = [str(artifacts / f"{stem}-{side}.json") for side in ("before", "after")]
    assert diff_main(["--format", "html", *argv]) == 0
    return artifacts / f"{stem}-after-diff.html"


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


def load(drv: Driver, page: Path, *, scheme: str = "light") -> Loaded:
    drv.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": scheme}]},
    )
    drv.get_log("browser")
    drv.get_log("performance")
    drv.get(page.as_uri())
    try:
        WebDriverWait(drv, LOAD_TIMEOUT_S).until(
            lambda d: d.execute_script("return document.documentElement.dataset.ready") == "true"
        )
    except Exception:
        pytest.fail(f"the diff page never finished drawing; console: {drv.get_log('browser')}")
    return Loaded(drv, page.as_uri())


def screenshot(drv: Driver, path: Path) -> None:
    size = drv.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 16000)}
    shot = drv.execute_cdp_cmd(
        "Page.captureScreenshot",
        {"format": "png", "captureBeyondViewport": True, "clip": {**clip, "scale": 1}},
    )
    path.write_bytes(base64.b64decode(shot["data"]))


def rows(drv: Driver, table: str) -> list[Any]:
    return list(drv.find_elements(By.CSS_SELECTOR, f"table[data-table={table}] tbody tr"))


def line_numbers(drv: Driver, table: str) -> list[int]:
    return [int(r.get_attribute("data-line")) for r in rows(drv, table)]


# --------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def simple_page(artifacts: Path) -> Path:
    # Lines 7 and 8 twice as slow, each with twice the samples: both beyond the noise.
    return diff_page(artifacts, "cpu_simple.json", SIMPLE, [(8, 199), (7, 82)])


def test_the_diff_page_renders_offline(driver: Driver, simple_page: Path, artifacts: Path) -> None:
    load(driver, simple_page).check_clean()
    assert driver.find_element(By.TAG_NAME, "h1").text == "simple.py"
    assert "noise threshold 2σ" in driver.find_element(By.CSS_SELECTOR, ".facts").text
    assert line_numbers(driver, "slower-lines") == [8, 7]  # the larger change first
    first = [td.text for td in rows(driver, "slower-lines")[0].find_elements(By.TAG_NAME, "td")]
    assert first[:3] == ["simple.py:8", "total += (i * i) % 7", "1.99 s"]
    assert first[3:5] == ["3.98 s", "+1.99 s"] and first[5].startswith("+")
    assert first[6] == "199 → 398"
    assert [r.text.split()[0] for r in rows(driver, "slower-functions")] == ["checksum"]
    assert rows(driver, "faster-lines")[0].text == "No line got faster beyond the noise."
    # The rest is within the noise, folded away until asked for.
    noise = driver.find_element(By.CSS_SELECTOR, "details#noise")
    assert noise.get_attribute("open") is None
    assert line_numbers(driver, "noise-lines") == [9, 10, 15]
    assert not rows(driver, "noise-lines")[0].is_displayed()
    noise.find_element(By.TAG_NAME, "summary").click()
    assert noise.get_attribute("open") is not None
    assert rows(driver, "noise-lines")[0].is_displayed()
    screenshot(driver, artifacts / "diff-light.png")

    load(driver, simple_page, scheme="dark").check_clean()
    background = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
    red, green, blue = (int(x) for x in background[background.index("(") + 1 : -1].split(",")[:3])
    assert red + green + blue < 3 * 64, background
    screenshot(driver, artifacts / "diff-dark.png")


def test_clicking_a_header_sorts(driver: Driver, simple_page: Path) -> None:
    load(driver, simple_page).check_clean()
    table = "table[data-table=slower-lines]"
    where = driver.find_element(By.CSS_SELECTOR, f'{table} button[data-key="where"]')
    delta = driver.find_element(By.CSS_SELECTOR, f'{table} button[data-key="delta"]')
    assert delta.find_element(By.XPATH, "..").get_attribute("aria-sort") == "descending"
    where.click()
    assert line_numbers(driver, "slower-lines") == [7, 8]
    assert where.find_element(By.XPATH, "..").get_attribute("aria-sort") == "ascending"
    assert delta.find_element(By.XPATH, "..").get_attribute("aria-sort") is None
    where.click()
    assert line_numbers(driver, "slower-lines") == [8, 7]
    # Keyboard: the headers are buttons.
    before = driver.find_element(By.CSS_SELECTOR, f'{table} button[data-key="before"]')
    before.send_keys(Keys.ENTER)
    assert line_numbers(driver, "slower-lines") == [8, 7]
    before.send_keys(Keys.SPACE)
    assert line_numbers(driver, "slower-lines") == [7, 8]
    assert before.find_element(By.XPATH, "..").get_attribute("aria-sort") == "ascending"


def test_hostile_strings_are_only_text(driver: Driver, artifacts: Path) -> None:
    page = diff_page(artifacts, "hostile.json", EVIL, [(3, 43)])
    load(driver, page).check_clean()
    driver.find_element(By.CSS_SELECTOR, "details#noise summary").click()
    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018
    count = "return document.querySelectorAll(arguments[0]).length"
    assert driver.execute_script(count, "script") == 2
    assert driver.execute_script(count, "img, iframe, object, embed, b, style") == 1  # <style>
    assert driver.execute_script(count, "[onerror], [onmouseover]") == 0
    source = rows(driver, "slower-lines")[0].find_element(By.CSS_SELECTOR, "td.src").text
    assert source == "x = '</script><script>window.__pwned=1;alert(1)</script>'"
    text = driver.execute_script("return document.body.textContent")
    assert '<img src=x onerror="window.__pwned=2;alert(2)">' in text
    assert "<!-- <script>window.__pwned=4</script> -->" in text
    assert driver.title.startswith("spyglass diff · </script><script>")
    screenshot(driver, artifacts / "diff-hostile.png")
