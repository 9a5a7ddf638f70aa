"""Every way of starting a Python child makes it first-class in the run's profile: its exit
status, its own lines (a script elsewhere, a -m module, -c code, a fork, a multiprocessing
Process) with the CPU the child measured itself, and its threads' names, as the top-level
program's are."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from helpers import Runner, cpu, program

PARENT = program("starts_children.py")
CHILD = program("kind_child.py")
HOT = "# kind:hot"

# way -> the status the child leaves with
WAYS = {
    "c": 3,
    "script": 4,
    "module": 5,
    "fork": 6,
    "mp-fork": 7,
    "mp-spawn": 7,
    "mp-forkserver": 7,
    "shell": 8,
}


def child_file(way: str, elsewhere: Path) -> str:
    """The file the child's code is in, as the profile names it."""
    if way == "c":
        return "<string>"  # Python's name for -c code
    if way == "script":
        return str(elsewhere / "kind_child.py")
    if way == "module":
        return str(elsewhere / "kindpkg" / "work.py")
    return str(CHILD)


def hot_function(profile: dict[str, Any], path: str) -> dict[str, Any]:
    files = profile["files"]
    assert path in files, f"the child's code {path} is on no line; files: {sorted(files)}"
    found = [f for f in files[path]["functions"] if f["name"] == "crunch"]
    assert found, f"no crunch() in {path}: {files[path]['functions']}"
    hot = [x for x in files[path]["lines"] if HOT in str(x.get("source") or "")]
    assert hot, f"the hot line of {path} is not in the profile, or has no source"
    return dict(found[0])


@pytest.mark.parametrize("way", list(WAYS))
def test_a_child_is_profiled_as_the_program_is(runner: Runner, tmp_path: Path, way: str) -> None:
    # A child's script and package outside the program's directory: its own code all the
    # same, as a top-level script's directory is.
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "kindpkg").mkdir(parents=True)
    shutil.copy(CHILD, elsewhere / "kind_child.py")
    shutil.copy(CHILD, elsewhere / "kindpkg" / "work.py")
    (elsewhere / "kindpkg" / "__init__.py").write_text("", encoding="utf-8")
    where = {"script": [str(elsewhere / "kind_child.py")], "module": [str(elsewhere)]}
    args = [PARENT, way, *where.get(way, [])]

    proc, profile = runner.spyglass(args)
    assert profile is not None
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    child, parent = lines[0], lines[-1]
    assert parent["status"] == WAYS[way], proc.stdout + proc.stderr
    assert "left no usable profile" not in proc.stderr, proc.stderr

    entries = {p["pid"]: p for p in profile["processes"]}
    assert child["pid"] in entries, profile["processes"]
    assert entries[child["pid"]]["exit_status"] == WAYS[way], entries[child["pid"]]

    names = {t["name"] for t in profile["threads"]}
    for name in ("MainThread", "cruncher"):
        assert f"pid {child['pid']}: {name}" in names, sorted(names)

    # The child measured its hot function's CPU with thread_time(): the profile's figure
    # is that within sampling error (a thread's samples are its CPU over the interval, to
    # one interval at each end).
    crunch = hot_function(profile, child_file(way, elsewhere))
    interval = float(profile["interval_s"])
    truth = float(child["hot_cpu_s"])
    assert abs(cpu(crunch) - truth) <= 0.15 * truth + 3 * interval, (crunch, truth)


def test_processes_started_with_different_code_keep_a_file_each(runner: Runner) -> None:
    """The program's -c code and its child's -c code are both "<string>" to Python."""
    source = CHILD.read_text(encoding="utf-8")
    code = (
        "import subprocess, sys\n"
        f"subprocess.run([sys.executable, '-c', {source!r}, '0'])\n"
        "total = sum(i * i for i in range(3_000_000))  # parent:hot\n"
    )
    proc, profile = runner.spyglass(["-c", code])
    assert profile is not None
    assert proc.returncode == 0, proc.stderr
    child = json.loads(proc.stdout.splitlines()[0])
    own = profile["files"]["<string>"]
    assert any("# parent:hot" in str(x["source"]) for x in own["lines"]), own["lines"]
    theirs = profile["files"][f"<string> (pid {child['pid']})"]

    def is_hot(line: dict[str, Any]) -> bool:  # the parent's code holds the child's as text
        return str(line["source"]).strip().startswith("total = (total + i * i)")

    assert any(is_hot(x) for x in theirs["lines"]), theirs["lines"]
    assert not any(is_hot(x) for x in own["lines"]), own["lines"]
