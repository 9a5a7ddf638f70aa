"""The browser tier: one headless Chromium (Debian's, driven by Selenium) shared by the
tests of each module, and where their screenshots go. Without a browser the tests skip,
unless SPYGLASS_REQUIRE_BROWSER is set (CI sets it), which makes them fail instead."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

try:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service
except ImportError:
    webdriver = None

CHROME_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DRIVER_NAMES = ("chromedriver",)
WIDE = 1280

Driver = Any


def _missing(reason: str) -> None:
    if os.environ.get("SPYGLASS_REQUIRE_BROWSER"):
        pytest.fail(f"browser tests required but {reason}", pytrace=False)
    pytest.skip(reason)


def _find(env: str, names: tuple[str, ...]) -> str | None:
    given = os.environ.get(env)
    if given:
        return given if os.access(given, os.X_OK) else None
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    if webdriver is None:
        _missing("selenium is not installed (pip install selenium)")
    chrome = _find("SPYGLASS_CHROME", CHROME_NAMES)
    if chrome is None:
        _missing("no Chromium found (apt-get install chromium, or set SPYGLASS_CHROME)")
    chromedriver = _find("SPYGLASS_CHROMEDRIVER", DRIVER_NAMES)
    if chromedriver is None:
        _missing("no chromedriver found (apt-get install chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chrome
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={WIDE},900",
        "--hide-scrollbars",
        "--force-color-profile=srgb",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-sync",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    options.set_capability("unhandledPromptBehavior", "ignore")  # we look for alerts
    try:
        drv = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    except WebDriverException as e:
        _missing(f"Chromium did not start: {e.msg}")
    try:
        yield drv
    finally:
        drv.quit()


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("SPYGLASS_ARTIFACTS")
    if given:
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("browser-pages")
