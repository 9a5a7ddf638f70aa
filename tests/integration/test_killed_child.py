"""A child process that dies without warning (SIGKILL, a crash) still has its work in the
merged profile, up to its last sampling interval: children journal their run as they go."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

# The child notes its own CPU time as it goes (its thread's: spyglass's threads are not
# the program's): the ground truth of what it had done when the kill came.
CHILD = """
import os, sys, time
def crunch(report):
    t0 = time.thread_time()
    last = 0.0
    while True:
        sum(i * i for i in range(2000))
        now = time.thread_time()
        if now - last >= 0.005:
            with open(report + ".tmp", "w") as f:
                f.write(repr(now - t0))
            os.replace(report + ".tmp", report)  # whole, even if killed mid-way
            last = now
crunch(sys.argv[1])
"""

KILLED = """
import os, subprocess, sys, time
here = os.path.dirname(__file__)
child = subprocess.Popen(
    [sys.executable, os.path.join(here, "child.py"), os.path.join(here, "cpu")]
)
time.sleep(2.5)
child.kill()
print("child status", child.wait())
"""

TIMED_OUT = """
import os, subprocess, sys
here = os.path.dirname(__file__)
try:
    subprocess.run(
        [sys.executable, os.path.join(here, "child.py"), os.path.join(here, "cpu")], timeout=2
    )
except subprocess.TimeoutExpired:
    print("timed out")
"""

CRASHING_CHILD = """
import os, time
def build():
    return [bytearray(1 << 20) for _ in range(40)]
kept = build()
print("built", len(kept), flush=True)
time.sleep(0.2)  # the interval it dies in is lost: let that one be idle
os.kill(os.getpid(), 11)  # dies of SIGSEGV, as a crashing extension would
"""

CRASHED = """
import os, subprocess, sys
done = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "child.py")])
print("child status", done.returncode)
"""


def _run(tmp_path: Path, parent: str, child: str, *flags: str) -> tuple[Any, dict[str, Any]]:
    script = tmp_path / "parent.py"
    script.write_text(parent, encoding="utf-8")
    (tmp_path / "child.py").write_text(child, encoding="utf-8")
    out = tmp_path / "p.json"
    done = subprocess.run(
        [sys.executable, "-m", "spyglass", "run", *flags, "-o", str(out), str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done, json.loads(out.read_text(encoding="utf-8"))


def _child(profile: dict[str, Any]) -> dict[str, Any]:
    processes = profile["processes"]
    assert len(processes) == 2, processes
    child: dict[str, Any] = processes[1]
    assert child["recovered"] is True
    assert child["exit_status"] is None  # it never got to say
    return child


def _cpu(p: dict[str, Any]) -> float:
    return float(p["cpu_python_s"] + p["cpu_native_s"] + p["cpu_system_s"])


def _assert_kept_its_last_interval(tmp_path: Path, profile: dict[str, Any]) -> None:
    child = _child(profile)
    truth = float((tmp_path / "cpu").read_text())
    # The journal is at most one control tick behind the samples, and a sample at most one
    # interval behind the CPU clock: the loss is a few 10 ms intervals, not the whole child
    # (the bound is loose for a loaded machine; typically 10-30 ms are lost).
    assert truth - 0.1 <= _cpu(child) <= truth + 0.1, (truth, child)
    child_file = profile["files"][str(tmp_path / "child.py")]
    assert _cpu(child_file) >= 0.8 * truth - 0.1, (child_file, truth)
    assert any("sum(i * i" in ln["source"] for ln in child_file["lines"]), "lines lack source"


def test_a_child_killed_with_sigkill_keeps_all_but_its_last_interval(tmp_path: Path) -> None:
    done, profile = _run(tmp_path, KILLED, CHILD)
    assert "child status -9" in done.stdout
    _assert_kept_its_last_interval(tmp_path, profile)
    assert "died" in done.stderr  # the report says so


def test_a_child_killed_by_a_subprocess_timeout_keeps_its_work(tmp_path: Path) -> None:
    done, profile = _run(tmp_path, TIMED_OUT, CHILD, "--cpu-only", "--no-report")
    assert "timed out" in done.stdout
    _assert_kept_its_last_interval(tmp_path, profile)
    assert profile["memory_profiled"] is False


def test_a_crashing_child_keeps_its_memory_profile(tmp_path: Path) -> None:
    done, profile = _run(tmp_path, CRASHED, CRASHING_CHILD, "--no-report")
    assert "built 40" in done.stdout
    assert "child status -11" in done.stdout
    child = _child(profile)
    # 40 MiB kept alive when it died: its footprint and the line that built it survive.
    assert 30 <= child["max_footprint_mb"] <= 50, child
    assert profile["max_footprint_lineno"] == 4, profile["max_footprint_lineno"]
    lines = profile["files"][str(tmp_path / "child.py")]["lines"]
    build = [ln for ln in lines if "bytearray" in ln["source"]]
    assert build and build[0]["mem_alloc_mb"] >= 30, build


NATIVE_CHILD = """
import random
def crunch():
    numbers = [random.random() for _ in range(200_000)]
    while True:
        sorted(numbers)
crunch()
"""


def test_a_killed_child_keeps_its_native_breakdown_and_callers(tmp_path: Path) -> None:
    """The journal carries the native samples' addresses and the loaded objects: the
    supervisor names them from the object files once the child is gone."""
    done, profile = _run(tmp_path, KILLED, NATIVE_CHILD, "--cpu-only", "--no-report")
    assert "child status -9" in done.stdout
    _child(profile)
    lines = profile["files"][str(tmp_path / "child.py")]["lines"]
    line = next(ln for ln in lines if "sorted(numbers)" in ln["source"])
    assert line["cpu_native_s"] > 0.5, line
    functions = line.get("native_functions", [])
    # Sorting's own functions: list.sort's and timsort's (merge_at, gallop_right, ...), and
    # the comparison it picked for floats.
    words = ("sort", "compare", "merge", "gallop", "count_run")
    named = sum(f["cpu_s"] for f in functions if any(w in f["name"] for w in words))
    assert named >= 0.5 * line["cpu_native_s"], functions[:5]
    chains = [
        [c["name"] for c in entry.get("callers", [])]
        for stack in profile["stacks"]
        for entry in stack.get("native", [])
    ]
    assert any(any("sorted" in name for name in chain) for chain in chains), chains[:5]
