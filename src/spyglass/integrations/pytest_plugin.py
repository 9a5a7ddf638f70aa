"""The pytest plugin (entry point `pytest11`): `pytest --spyglass` profiles the tests.

pytest loads this module in every run once spyglass is installed, so it only declares the
options and the marker: everything that profiles lives in pytest_profiling and is
imported when --spyglass is given.
"""

from __future__ import annotations

import pytest

MARKER = (
    "spyglass(cpu_s=None, memory_mb=None, copy_mb=None): with --spyglass, fail the test when "
    "it uses more CPU seconds, a higher memory footprint (MiB) or copies more MiB than this"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("spyglass", "profiling with spyglass")
    group.addoption(
        "--spyglass",
        action="store_true",
        default=False,
        help="profile the tests: one profile of the session with a per-test breakdown",
    )
    group.addoption(
        "--spyglass-out",
        default="spyglass-profile.json",
        metavar="FILE",
        help="where --spyglass writes the profile (default: spyglass-profile.json)",
    )
    group.addoption(
        "--spyglass-html",
        default=None,
        metavar="DIR",
        help="with --spyglass, write an HTML report of each test that went over its limits to DIR",
    )
    group.addoption(
        "--spyglass-cpu-only",
        action="store_true",
        default=False,
        help="with --spyglass, profile CPU only (memory limits are then not judged)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    if config.getoption("spyglass", False):
        from spyglass.integrations.pytest_profiling import SuiteProfiler

        config.pluginmanager.register(SuiteProfiler(config), "spyglass-suite-profiler")
