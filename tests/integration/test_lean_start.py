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


# A program whose profile has what a report draws: threads named alike, memory, a child.
RICH_PROGRAM = """\
import subprocess, sys, threading
def work(n):
    blocks = [bytearray(2000) for _ in range(n)]
    return sum(i * i for i in range(n * 20))
threads = [threading.Thread(target=work, args=(20000,), name=f"worker-{i}") for i in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
subprocess.run([sys.executable, "-c", "print(sum(range(10**5)))"], check=True)
"""

# What the supervisor does after the program: merges the processes' profiles, writes the
# run's and shows the report; everything it imports for that, listed at the end.
REPORT = """\
import sys
import spyglass.cli.run, spyglass.runtime.supervisor
from spyglass import json_text
from spyglass.runtime import fragments, output
from spyglass.reporters import get_reporter
with open(sys.argv[1], encoding="utf-8") as f:
    profile = json_text.loads(f.read())
root, child = dict(profile), dict(profile)
merged = fragments.with_children(root, [child], [])
output.write_text_atomically(sys.argv[2], output.profile_text(merged))
get_reporter("terminal", color=True, profile_path=sys.argv[2]).write(merged, sys.stdout)
# A run of one process: its profile's text, with the run's members set, then read for the
# report.
import os
from spyglass.profile_model.compact import expanded
alone = sys.argv[2] + ".d"
os.mkdir(alone)
profile.pop("processes")
profile["stacks"] = profile.pop("stacks")  # last, where the program's process writes them
with open(os.path.join(alone, f"process-{profile['pid']}-0a0b0c0d.json"), "w") as f:
    f.write(output.profile_text(profile))
text = fragments.finish_run(alone, profile["pid"], 0, "rich.py")
assert isinstance(text, str), "not taken for a run of one process"
get_reporter("terminal", color=True).write(expanded(json_text.loads(text)), sys.stdout)
with open(sys.argv[3], "w", encoding="utf-8") as f:
    f.write(json_text.dumps(sorted(sys.modules)))
"""

# What the end of a run must not import: tens of milliseconds that every `spyglass run`
# would wait for after its program, most of the start-up a short program sees.
REPORT_MUST_NOT_LOAD = (
    "json",
    "re",
    "typing",
    "enum",
    "collections",
    "functools",
    "contextlib",
    "textwrap",
    "shlex",
    "argparse",
    "dataclasses",
    "spyglass._native",
)


def test_the_run_report_imports_nothing_heavy(runner: Runner) -> None:
    script = runner.workdir / "rich.py"
    script.write_text(RICH_PROGRAM)
    proc, profile = runner.spyglass([script])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None and profile["memory_profiled"] and len(profile["threads"]) >= 4
    source = runner.workdir / "rich.json"
    source.write_text(json.dumps(profile))
    reporter = runner.workdir / "report.py"
    reporter.write_text(REPORT)
    merged, modules = runner.workdir / "merged.json", runner.workdir / "modules.json"
    shown = runner.python([reporter, source, merged, modules])
    assert shown.returncode == 0, shown.stderr
    assert "worker-N" in shown.stdout and "mem" in shown.stdout  # the report was drawn
    assert json.loads(merged.read_text())["processes"]
    heavy = sorted(m for m in _loaded(str(modules)) if m.split(".")[0] in REPORT_MUST_NOT_LOAD)
    assert not heavy, f"the end of a run imported {heavy}"
