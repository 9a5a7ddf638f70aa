"""Tools built on the interpreter's tracing hooks, run under spyglass: coverage.py (through
sys.settrace, and through sys.monitoring on 3.12+) measures exactly what it measures in a
plain run, and spyglass still profiles the program."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import (
    Runner,
    cpu,
    describe,
    function_figures,
    line_figures,
    total_cpu,
)

PROGRAM = """
def work(n):
    total = 0
    for i in range(n):
        if i % 3:
            total += i * i  # traced:hot
        else:
            total -= i
    return total


def never_called():
    return "not covered"


print(work(3_000_000))  # most of the run, coverage's own start-up and report included
"""

CORES = ["ctrace"] + (["sysmon"] if sys.version_info >= (3, 12) else [])


def _report(cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "coverage", "report", "--show-missing"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("core", CORES)
def test_coverage_measures_the_same_and_the_program_is_profiled(
    runner: Runner, tmp_path: Path, core: str
) -> None:
    if importlib.util.find_spec("coverage") is None:
        pytest.skip(f"coverage is not installed for {sys.executable}")
    results = {}
    for mode in ("plain", "profiled"):
        cwd = tmp_path / mode
        cwd.mkdir()
        (cwd / "traced.py").write_text(PROGRAM, encoding="utf-8")
        env = {**runner.env, "COVERAGE_CORE": core}
        target = ["-m", "coverage", "run", "--branch", "traced.py"]
        if mode == "plain":
            done = runner.python(target, cwd=cwd, env=env)
            profile = None
        else:
            done, profile = runner.spyglass(
                target, cwd=cwd, env=env, options=["--program-path", str(cwd)]
            )
        assert done.returncode == 0, done.stderr
        results[mode] = (done.stdout, _report(cwd, env), profile)
    assert results["profiled"][0] == results["plain"][0]
    # The same lines and branches measured, and the same ones missed (never_called).
    assert results["profiled"][1] == results["plain"][1], results["profiled"][1]
    assert "traced.py" in results["plain"][1]
    profile = results["profiled"][2]
    assert profile is not None
    traced = tmp_path / "profiled" / "traced.py"
    work = function_figures(profile, "work", traced)
    hot = line_figures(profile, traced, "# traced:hot")
    assert work["samples"] >= 10, describe(work)
    assert cpu(work) >= 0.5 * total_cpu(profile), describe(work)
    assert hot["samples"] >= 1, describe(hot)
