"""Leaks in a test suite run whole under `spyglass run -m pytest`. A parametrized test that
keeps 1 MiB a call in a module's list leaks, whether other tests run after it or only
pytest's summary does: its line stopped growing when its calls stopped, not while they went
on, as a cache's does. It was called no leak, in the middle of the suite or at its end:
over the rest of the run (other tests' churn, pytest's own end of session) its growth was
over early. A test that drops what it made is no leak."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers import Runner, file_entry, line_figures

LEAKY = """
RESULTS = []  # grows with every call of the test below


@pytest.mark.parametrize("i", range(40))
def test_keeps_a_block(i):
    payload = bytearray(1 << 20)  # LEAK
    RESULTS.append(payload)
    assert len(RESULTS) == i + 1
"""

DROPPING = """
@pytest.mark.parametrize("i", range(40))
def test_drops_its_block(i):
    payload = bytearray(1 << 20)  # TEMPORARY
    assert len(payload) == 1 << 20
"""

OTHERS = """
@pytest.mark.parametrize("n", [20_000, 60_000, 120_000])
def test_rows(n):
    rows = [float(x % 97) for x in range(n)]
    assert sum(rows) > 0


def test_words():
    words = ["token%05d" % i * 20 for i in range(40_000)]
    assert len(set(words)) == 40_000
"""


def _suite(tmp_path: Path, *parts: str) -> Path:
    suite = tmp_path / "suite"
    suite.mkdir()
    body = "import pytest\n" + "\n".join(parts)
    (suite / "test_app.py").write_text(body, encoding="utf-8")
    return suite / "test_app.py"


def _run(runner: Runner, test_file: Path) -> Any:
    proc, profile = runner.spyglass(
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file.parent)],
        cwd=test_file.parent,
    )
    assert profile is not None
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return profile


def _leaks(profile: Any, test_file: Path) -> list[int]:
    return [int(leak["lineno"]) for leak in file_entry(profile, test_file).get("leaks") or []]


def _lineno(test_file: Path, marker: str) -> int:
    lines = test_file.read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, start=1) if marker in line)


@pytest.mark.parametrize("where", ["middle", "last"])
def test_a_test_keeping_a_block_a_call_leaks(runner: Runner, tmp_path: Path, where: str) -> None:
    parts = (LEAKY, OTHERS) if where == "middle" else (OTHERS, LEAKY)
    test_file = _suite(tmp_path, *parts)
    profile = _run(runner, test_file)
    leak = line_figures(profile, test_file, "# LEAK")
    leaks = _leaks(profile, test_file)
    print(f"\nleaky line: {leak.get('mem_live_end_mb')} MB live, leaks at lines {leaks}")
    assert leaks == [_lineno(test_file, "# LEAK")], leak
    assert float(leak["mem_live_end_mb"]) == pytest.approx(40, rel=0.15), leak


def test_a_test_dropping_its_block_does_not(runner: Runner, tmp_path: Path) -> None:
    test_file = _suite(tmp_path, DROPPING, OTHERS)
    profile = _run(runner, test_file)
    assert _leaks(profile, test_file) == [], line_figures(profile, test_file, "# TEMPORARY")
