"""A child process killed without warning (SIGKILL) still has its work in the merged
profile: children rewrite their fragment every second while they run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PARENT = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "child.py")])
time.sleep(3.5)
child.kill()
print("child status", child.wait())
"""

CHILD = """
import time
def crunch():
    t = time.process_time()
    while time.process_time() - t < 60:
        sum(i * i for i in range(10000))
crunch()
"""


def test_a_child_killed_with_sigkill_keeps_its_work(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(PARENT, encoding="utf-8")
    (tmp_path / "child.py").write_text(CHILD, encoding="utf-8")
    out = tmp_path / "p.json"
    done = subprocess.run(
        [sys.executable, "-m", "spyglass", "run", "--no-report", "-o", str(out), str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "child status -9" in done.stdout
    profile = json.loads(out.read_text(encoding="utf-8"))
    processes = profile["processes"]
    assert len(processes) == 2, processes
    child = processes[1]
    assert child["exit_status"] is None  # it never got to say
    child_cpu = child["cpu_python_s"] + child["cpu_native_s"] + child["cpu_system_s"]
    # It ran ~3.5 s of CPU; the last snapshot is at most a second (and a tick) old.
    assert child_cpu >= 1.5, child
    crunch = [
        fn
        for f in profile["files"].values()
        for fn in f["functions"]
        if fn["name"].endswith("crunch")
    ]
    assert crunch, list(profile["files"])
    lines = [ln for f in profile["files"].values() for ln in f["lines"] if ln["source"]]
    assert any("sum(i * i" in ln["source"] for ln in lines), "snapshot lines lack source"
