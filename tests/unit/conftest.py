"""Shared helpers for the unit tests of the profile readers."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any, Callable

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def read_fixture(name: str) -> dict[str, Any]:
    """A fixture decoded with plain json (no spyglass code involved)."""
    with open(FIXTURES / name, encoding="utf-8") as fh:
        doc: dict[str, Any] = json.load(fh)
    return doc


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def simple() -> dict[str, Any]:
    return read_fixture("cpu_simple.json")


@pytest.fixture
def multifile() -> dict[str, Any]:
    return read_fixture("cpu_multifile.json")


@pytest.fixture
def mem() -> dict[str, Any]:
    """A profile with memory figures (schema version 2, memory_profiled true)."""
    return read_fixture("mem_simple.json")


@pytest.fixture
def mem_cpu_only(mem: dict[str, Any]) -> dict[str, Any]:
    """mem_simple.json as if the run had been profiled for CPU only (no memory keys)."""
    from spyglass.profile_model import memory_figures as memory

    cpu = copy.deepcopy(mem)
    cpu["memory_profiled"] = False
    for key in memory.TOP_KEYS:
        del cpu[key]
    for entry in cpu["files"].values():
        for key in (*memory.SPLIT_KEYS, "leaks"):
            del entry[key]
        for item in [*entry["lines"], *entry["functions"]]:
            for key in memory.LINE_KEYS:
                del item[key]
    for item in [*cpu["threads"], *cpu["stacks"]]:
        for key in memory.SPLIT_KEYS:
            del item[key]
    return cpu


@pytest.fixture
def render() -> Callable[..., str]:
    """Render a profile with the terminal reporter into a string."""
    from spyglass.reporters.terminal import TerminalReporter

    def _render(
        profile: dict[str, Any], *, width: int | None = 80, color: bool = False, **kw: Any
    ) -> str:
        out = io.StringIO()
        TerminalReporter(color=color, width=width, **kw).write(copy.deepcopy(profile), out)
        return out.getvalue()

    return _render
