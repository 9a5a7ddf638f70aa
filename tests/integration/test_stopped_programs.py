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


@pytest.mark.parametrize(
    "mode, flags",
    [
        ("full", ["--stopper"]),
        ("cpu-only", ["--stopper"]),
        ("full", ["--stopper", "--faulthandler"]),
        ("cpu-only", ["--faulthandler"]),
    ],
)
def test_callees_freed_by_their_call_are_never_read_to_the_programs_harm(
    runner: Runner, mode: str, flags: list[str]
) -> None:
    # A call frees its callee while the callee's slot still points to it. Read there, the
    # callee's type killed the program (3.11, 3 runs out of 3 in each case):
    # - by the wait engine, which reads a stopped thread's stack with the GIL and found it
    #   at the check after a CALL_FUNCTION_EX whose callee was gone (--stopper);
    # - by the CPU sampler's handler and by the wait engine inside their fault guard, once
    #   faulthandler's handler came first (pytest enables it), which reports the fault as
    #   a crash before the guard can catch it (--faulthandler).
    # And spyglass stopped itself as the program stopped (--stopper), never continued.
    target = program("stopped_after_calls.py")
    env = {**runner.env, "MALLOC_MMAP_THRESHOLD_": "65536"}
    options = ["--cpu-only"] if mode == "cpu-only" else []
    done, profile = runner.spyglass([target, "2", *flags], options=options, env=env, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["calls"] > 0
    assert profile is not None
    calls = [line_figures(profile, target, f"# stopped:{k}") for k in ("star-call", "plain-call")]
    assert sum(c["samples"] for c in calls) >= 10, [describe(c) for c in calls]


# Run in a session of its own, so that spyglass's process group has a parent in the same
# session in another group: job control's stops are then delivered, not discarded.
JOB_CONTROL = """
import os, signal, subprocess, sys, time
command = sys.argv[1:]
os.setsid()
spyglass = subprocess.Popen(command, preexec_fn=os.setpgrp)
try:
    stopped = None
    deadline = time.monotonic() + 60
    while stopped is None and time.monotonic() < deadline:
        pid, status = os.waitpid(spyglass.pid, os.WNOHANG | os.WUNTRACED)
        if pid == 0:
            time.sleep(0.02)
        elif os.WIFSTOPPED(status):
            stopped = os.WSTOPSIG(status)
        else:
            spyglass.returncode = os.waitstatus_to_exitcode(status)
            break
    if stopped is not None:
        os.killpg(spyglass.pid, signal.SIGCONT)  # fg
    print(signal.Signals(stopped).name if stopped else None, spyglass.wait(timeout=60))
finally:
    try:
        os.killpg(spyglass.pid, signal.SIGKILL)  # whatever is left of the job
    except ProcessLookupError:
        pass
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
