"""What a profiled process imports before its program's first line: besides spyglass's
own modules, nothing plain python does not import itself. Each module that came back
(json and re, argparse, dis, rich...) would cost every process of every run milliseconds of
start-up, the main program's and each child's."""

from __future__ import annotations

import json

import pytest

from helpers import Runner

# Writes the modules loaded when its first line runs, then starts itself once more as a
# child (which spyglass profiles too) to do the same.
PROGRAM = """\
import sys
loaded = sorted(sys.modules)
import json, os, subprocess
with open(sys.argv[1], "w") as f:
    json.dump(loaded, f)
if len(sys.argv) > 2:
    subprocess.run([sys.executable, __file__, sys.argv[2]], check=True)
"""

# Heavy modules that must not be loaded before the program starts: each costs a process
# milliseconds of start-up, and none is needed to start profiling it.
MUST_NOT_LOAD = (
    "json",
    "re",
    "argparse",
    "enum",
    "dis",
    "threading",  # and the collections, functools and operator it imports
    "collections",
    "functools",
    "sysconfig",
    "linecache",
    "tokenize",
    "subprocess",
    "shutil",
    "typing",
    "dataclasses",
    "rich",
    "spyglass.reporters",
    "spyglass.profile_model.io",
    "spyglass.profile_model.merging",
)


def _is_heavy(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in MUST_NOT_LOAD)


def _loaded(path: str) -> set[str]:
    with open(path, encoding="utf-8") as f:
        return set(json.load(f))


@pytest.mark.parametrize("flags", [[], ["--cpu-only"]])
def test_a_profiled_process_imports_nothing_heavy_before_its_program(
    runner: Runner, flags: list[str]
) -> None:
    script = runner.workdir / "modules.py"
    script.write_text(PROGRAM)
    plain_out, main_out, child_out = (str(runner.workdir / f"{n}.json") for n in "pmc")
    plain = runner.python([script, plain_out])
    assert plain.returncode == 0, plain.stderr
    proc, profile = runner.spyglass([script, main_out, child_out], options=flags)
    assert proc.returncode == 0, proc.stderr
    assert profile is not None and len(profile["processes"]) == 2
    baseline = _loaded(plain_out)
    for where, path in (("the program", main_out), ("its child", child_out)):
        added = _loaded(path) - baseline
        heavy = sorted(m for m in added if _is_heavy(m))
        assert not heavy, f"{where} loaded {heavy} before its first line"
