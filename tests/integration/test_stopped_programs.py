"""A program stopped and continued while it is profiled: by job control (Ctrl-Z, then fg),
which stops spyglass with it, or by another process that stops and continues the program
alone (a debugger, a tracer, `kill -STOP`), which must neither stop spyglass for good nor
lead the collector to read memory the program has freed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import Runner, describe, line_figures, program


@pytest.mark.parametrize("mode", ["full", "cpu-only"])
def test_a_program_stopped_and_continued_alone_runs_to_its_end_profiled(
    runner: Runner, mode: str
) -> None:
    # Stopped, the program's thread is off its CPU without blocking: the collector reads
    # its stack with the GIL, which it finds given up at the check after a call whose
    # callee was just freed and unmapped. The collector read that callee's type there and
    # killed the program (3.11: 3 runs out of 3); spyglass stopped itself as the program
    # stopped, and was never continued.
    target = program("stopped_after_calls.py")
    env = {**runner.env, "MALLOC_MMAP_THRESHOLD_": "65536"}
    options = ["--cpu-only"] if mode == "cpu-only" else []
    done, profile = runner.spyglass([target, "2"], options=options, env=env, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["calls"] > 0
    assert profile is not None
    call = line_figures(profile, target, "# stopped:call")
    assert call["samples"] >= 10, describe(call)


# Run in a session of its own, so that spyglass's process group has a parent in the same
# session in another group: job control's stops are then delivered, not discarded.
JOB_CONTROL = """
import os, signal, subprocess, sys, time
command = sys.argv[1:]
os.setsid()
spyglass = subprocess.Popen(command, preexec_fn=os.setpgrp)
stopped = None
deadline = time.monotonic() + 60
while stopped is None and time.monotonic() < deadline:
    pid, status = os.waitpid(spyglass.pid, os.WNOHANG | os.WUNTRACED)
    if pid == 0:
        time.sleep(0.02)
    elif os.WIFSTOPPED(status):
        stopped = os.WSTOPSIG(status)
    else:
        break
os.killpg(spyglass.pid, signal.SIGCONT)  # fg
print(signal.Signals(stopped).name if stopped else None, spyglass.wait(timeout=60))
"""

SELF_STOPPING = """
import os, signal, time
time.sleep(0.2)
os.kill(os.getpid(), signal.SIGTSTP)  # as Ctrl-Z would
print("continued")
"""


def test_ctrl_z_stops_spyglass_with_the_program_and_fg_continues_both(
    runner: Runner, tmp_path: Path
) -> None:
    script = tmp_path / "self_stopping.py"
    script.write_text(textwrap.dedent(SELF_STOPPING), encoding="utf-8")
    outfile = tmp_path / "profile.json"
    command = [*runner.command, "run", "--no-report", "-o", str(outfile), str(script)]
    done = subprocess.run(
        [sys.executable, "-c", JOB_CONTROL, *command],
        env=runner.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    # spyglass stopped (as the shell must see the job stop), then ran to the end with the
    # program once continued.
    assert lines[-1] == "SIGSTOP 0", done.stdout + done.stderr[-2000:]
    assert "continued" in lines, done.stdout
    assert outfile.is_file()
