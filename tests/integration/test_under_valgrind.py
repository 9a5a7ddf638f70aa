"""The extension under valgrind's memcheck, inside a real interpreter: start, sample
allocations and copies, stop and build the profile, with no invalid access, use of an
uninitialised value or bad free in spyglass's own code. (scripts/test-all runs the C++
hook tests under valgrind too; this is the same code loaded into Python.)

CPython itself is not valgrind-clean on every version (3.11 reads bytes getrandom filled,
which memcheck does not see as written): only errors with a frame in spyglass's extension
count."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = [pytest.mark.valgrind, pytest.mark.slow]

PROGRAM = """\
import spyglass
spyglass.start(memory_window=4096)
data = [bytes(1000) for _ in range(2000)]
copies = [bytearray(b) for b in data]
del data
profile = spyglass.stop()
print(profile["format"], len(profile["files"]) >= 1)
"""


def _ours(error: ET.Element) -> bool:
    """An access error whose own stack (not where the block was allocated: every
    allocation passes through spyglass's hooks) runs through spyglass's extension."""
    if (error.findtext("kind") or "").startswith("Leak_"):
        return False
    stack = error.find("stack")
    objects = [obj.text or "" for obj in stack.iter("obj")] if stack is not None else []
    return any("spyglass" in o and "_native" in o for o in objects)


def test_profiling_a_program_makes_no_memory_error_in_spyglass(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        if os.environ.get("SPYGLASS_REQUIRE_VALGRIND"):
            pytest.fail("valgrind is required but not installed", pytrace=False)
        pytest.skip("valgrind is not installed")
    report = tmp_path / "memcheck.xml"
    program = tmp_path / "work.py"
    program.write_text(PROGRAM)
    python = [sys.executable, str(program)]
    env = dict(child_env, PYTHONMALLOC="malloc")  # every allocation seen by memcheck
    done = subprocess.run(
        # Leaks do not count (_ours): what the extension keeps for the process's life is
        # no error, and every block is allocated through its hooks.
        [valgrind, "-q", "--xml=yes", f"--xml-file={report}", *python],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "spyglass-profile True\n"
    errors = ET.parse(report).getroot().findall("error")
    ours = [e for e in errors if _ours(e)]
    described = [
        f"{e.findtext('kind')}: {e.findtext('what') or e.findtext('xwhat/text')}" for e in ours
    ]
    assert not ours, "\n".join(described)
