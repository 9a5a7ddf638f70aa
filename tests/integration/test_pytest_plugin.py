"""`pytest --spyglass` on a small suite of tests of known shapes
(tests/programs/sample_suite, copied for each run): the per-test breakdown, a limit that
fails its test naming the heaviest line, HTML reports of such tests, xdist workers merged,
and a plugin that does nothing without --spyglass.

Every `_mb` figure is in MiB (2**20 bytes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    PROGRAMS_DIR,
    RUN_TIMEOUT_S,
    Profile,
    load_profile,
    source_lineno,
)

SUITE = PROGRAMS_DIR / "sample_suite"
SPIN_S = 0.3  # as in the suite
NODE = "suite_work.py::"
ALL_TESTS = {
    "test_spins",
    "test_allocates",
    "test_sleeps",
    "test_over_its_cpu_limit",
    "test_within_its_limits",
}


def run_suite(
    workdir: Path, env: dict[str, str], *args: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    suite = workdir / "suite"
    shutil.copytree(SUITE, suite)
    env = {k: v for k, v in env.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    cmd = [sys.executable, "-m", "pytest", *args]
    proc = subprocess.run(
        cmd,
        cwd=suite,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S * 2,
    )
    return proc, suite


def entries_of(profile: Profile) -> dict[str, dict[str, Any]]:
    return {t["nodeid"].replace(NODE, ""): t for t in profile["tests"]}


def cpu(entry: dict[str, Any]) -> float:
    return float(entry["cpu_python_s"] + entry["cpu_native_s"] + entry["cpu_system_s"])


@pytest.fixture(scope="module")
def serial(
    tmp_path_factory: pytest.TempPathFactory, child_env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], Path]:
    args = ("--spyglass", "--spyglass-out", "prof.json", "--spyglass-html", "html")
    return run_suite(tmp_path_factory.mktemp("suite"), child_env, *args)


def check_breakdown(profile: Profile) -> None:
    tests = entries_of(profile)
    assert set(tests) == ALL_TESTS, sorted(tests)
    # The spinning tests used about SPIN_S of CPU (they measure it themselves); the
    # sleeping one waited about as long and used next to none.
    for name in ("test_spins", "test_over_its_cpu_limit"):
        assert 0.6 * SPIN_S <= cpu(tests[name]) <= 2 * SPIN_S, (name, tests[name])
    assert cpu(tests["test_sleeps"]) < 0.3 * SPIN_S, tests["test_sleeps"]
    # Its own waiting only: under pytest-xdist, execnet's I/O thread waits through every
    # test too, and a test's wait was twice its sleep.
    assert 0.5 * SPIN_S <= tests["test_sleeps"]["wait_s"] <= 1.5 * SPIN_S, tests["test_sleeps"]
    alloc = tests["test_allocates"]["mem_alloc_mb"]
    assert abs(alloc - 48) <= 0.15 * 48, tests["test_allocates"]
    assert tests["test_allocates"]["max_footprint_mb"] >= 0.9 * 48
    assert tests["test_over_its_cpu_limit"]["outcome"] == "failed"
    assert tests["test_spins"]["outcome"] == "passed"


def test_the_profile_has_a_per_test_breakdown(
    serial: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    proc, suite = serial
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the one test over its limit
    profile = load_profile(suite / "prof.json")
    check_breakdown(profile)
    spin_line = source_lineno(suite / "suite_work.py", "suite:spin")
    lines = {ln["lineno"]: ln for ln in profile["files"][str(suite / "suite_work.py")]["lines"]}
    assert cpu(lines[spin_line]) >= 0.6 * 2 * SPIN_S, lines[spin_line]
    assert "tests by CPU" in proc.stdout and "prof.json" in proc.stdout, proc.stdout


def test_a_test_over_its_limit_fails_naming_its_heaviest_line(
    serial: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    proc, suite = serial
    assert f"FAILED {NODE}test_over_its_cpu_limit" in proc.stdout, proc.stdout
    assert "FAILED" not in proc.stdout.replace(f"FAILED {NODE}test_over_its_cpu_limit", "")
    message = proc.stdout[proc.stdout.index("went over its limits") :]
    spin_line = source_lineno(suite / "suite_work.py", "suite:spin")
    assert f"suite_work.py:{spin_line}" in message and "suite:spin" in message, message
    reports = sorted(p.name for p in (suite / "html").iterdir())
    assert reports == ["suite_work.py_test_over_its_cpu_limit.html"], reports


def test_spyglass_view_shows_the_breakdown(
    serial: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, suite = serial
    shown = subprocess.run(
        [sys.executable, "-m", "spyglass", "view", "--no-color", str(suite / "prof.json")],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert shown.returncode == 0, shown.stderr
    assert "tests by CPU" in shown.stdout and "::test_spins" in shown.stdout, shown.stdout


@pytest.mark.slow
def test_xdist_workers_are_merged(tmp_path: Path, child_env: dict[str, str]) -> None:
    proc, suite = run_suite(
        tmp_path, child_env, "--spyglass", "--spyglass-out", "p.json", "-n", "2"
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    profile = load_profile(suite / "p.json")
    check_breakdown(profile)
    workers = {t.get("worker") for t in profile["tests"]}
    assert workers == {"gw0", "gw1"}, workers
    names = sorted(t["name"] for t in profile["threads"])
    assert any(n.startswith("gw0: ") for n in names) and any(n.startswith("gw1: ") for n in names)
    assert not any(n.count("gw") > 1 for n in names), names


@pytest.mark.slow
def test_without_the_option_the_plugin_does_nothing(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    proc, suite = run_suite(tmp_path, child_env, "--strict-markers")
    assert proc.returncode == 0, proc.stdout + proc.stderr  # limits are not judged
    assert not (suite / "spyglass-profile.json").exists()
    assert "spyglass" not in proc.stdout.replace("spyglass-profiler", "").lower()


def test_the_plugin_imports_nothing_heavy_without_the_option() -> None:
    code = (
        "import sys, spyglass.integrations.pytest_plugin;"
        "print(sorted(m for m in sys.modules if m.startswith('spyglass')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.replace("'", '"'))
    assert loaded == [
        "spyglass",
        "spyglass._constants",
        "spyglass.integrations",
        "spyglass.integrations.pytest_plugin",
    ], loaded
    assert os.sep not in done.stdout
