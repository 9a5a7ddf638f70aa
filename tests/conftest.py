"""Fixtures shared by the whole suite; the helpers they use are in helpers.py."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import Runner, build_alloc_storm, build_spin_ext, left_behind, process_state


def pytest_configure(config: pytest.Config) -> None:
    # A suite started in the background by a non-interactive shell (a script's `&`, nohup)
    # inherits SIGINT ignored, and so would every program it profiles and every child of
    # those: the Ctrl-C tests then wait out programs that were meant to end of it (80
    # children interrupted as they started each ran its ten seconds, and the test timed
    # out). Python's own handler instead, as a suite started in the foreground has: a
    # process started from here gets SIGINT's default.
    del config
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def spin_ext_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the built spin_ext module (put on the children's PYTHONPATH)."""
    return build_spin_ext(tmp_path_factory.mktemp("spin_ext"))


@pytest.fixture(scope="session")
def child_env(spin_ext_dir: Path) -> dict[str, str]:
    """The environment of every child process: ours, with spin_ext importable and nothing
    that would make a child interpreter behave differently from a plain `python` run."""
    env = dict(os.environ)
    # PYTHONUNBUFFERED too: the tests compare output with a default, buffered python.
    drop = (
        "PYTHONSTARTUP",
        "PYTHONINSPECT",
        "PYTHONBREAKPOINT",
        "PYTHONWARNINGS",
        "PYTHONUNBUFFERED",
    )
    for name in drop:
        env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(spin_ext_dir), env.get("PYTHONPATH", "")) if p
    )
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["NO_COLOR"] = "1"
    return env


@pytest.fixture(scope="session")
def alloc_storm_lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The path of the built liballoc_storm.so (tests/ext/alloc_storm.c)."""
    return build_alloc_storm(tmp_path_factory.mktemp("alloc_storm"))


@pytest.fixture(scope="session")
def make_runner(tmp_path_factory: pytest.TempPathFactory, child_env: dict[str, str]) -> Any:
    """A factory of Runners, each with a fresh working directory; for module-scoped runs."""

    def make(name: str) -> Runner:
        return Runner(tmp_path_factory.mktemp(name), child_env)

    return make


@pytest.fixture
def runner(tmp_path: Path, child_env: dict[str, str]) -> Runner:
    return Runner(tmp_path, child_env)


@pytest.fixture(autouse=True)
def _leaves_no_profiler_behind() -> Iterator[None]:
    """Fails a test that leaves a profiler running or process hooks installed (and stops
    the profiler, so that the next test starts clean)."""
    before = process_state()
    yield
    problems = left_behind(before)
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)
