"""Runs of test programs that several integration test modules read: each program runs under
spyglass once per session and the tests share the result (the tier has to stay fast)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from helpers import ProgramRun, Runner, program


def _run(make_runner: Callable[[str], Runner], name: str, *args: str) -> ProgramRun:
    runner = make_runner(Path(name).stem)
    proc, profile = runner.spyglass([program(name), *args])
    assert proc.returncode == 0, f"{name} failed under spyglass:\n{proc.stderr}"
    assert profile is not None
    return proc, profile


@pytest.fixture(scope="session")
def pure_python_run(make_runner: Callable[[str], Runner]) -> ProgramRun:
    return _run(make_runner, "pure_python_loop.py")


@pytest.fixture(scope="session")
def native_calls_run(make_runner: Callable[[str], Runner]) -> ProgramRun:
    return _run(make_runner, "native_calls.py", "0.25")


@pytest.fixture(scope="session")
def threads_run(make_runner: Callable[[str], Runner]) -> ProgramRun:
    return _run(make_runner, "threads_busy_main_joins.py")


@pytest.fixture(scope="session")
def default_argument_run(make_runner: Callable[[str], Runner]) -> ProgramRun:
    return _run(make_runner, "busy_default_argument.py")


@pytest.fixture(scope="session")
def sleeper_run(make_runner: Callable[[str], Runner]) -> ProgramRun:
    return _run(make_runner, "sleeper.py", "0.5")


@pytest.fixture(scope="session")
def blocking_run(make_runner: Callable[[str], Runner]) -> ProgramRun:
    return _run(make_runner, "blocking_calls.py")
