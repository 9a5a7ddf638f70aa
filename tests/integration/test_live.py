"""`spyglass run --live`: the view of the run so far, drawn on a real terminal (a tmux pane)
while the program runs; the program shows that it was still running when the test saw its
hot line there, and the report, the profile and the program's output follow as usual."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import Runner, program

SPIN = program("live_spin.py")


def _tmux(socket: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_the_live_view_shows_the_hot_line_while_the_program_runs(tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (scripts/test-deps installs it)", pytrace=False)
    socket = f"spyglass-live-{os.getpid()}"
    stop_file, status_file = tmp_path / "stop", tmp_path / "status"
    out = tmp_path / "p.json"
    run = [sys.executable, "-m", "spyglass", "run", "--live", "-o", str(out), str(SPIN)]
    # The pane stays open after the run, for the test to read (the test ends its tmux).
    status = f"echo $? > {shlex.quote(str(status_file))}"
    shell = f"{shlex.join([*run, str(stop_file)])}; {status}; sleep 120"
    started = _tmux(socket, "new-session", "-d", "-x", "160", "-y", "48", "sh", "-c", shell)
    assert started.returncode == 0, started.stderr
    seen = ""
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not status_file.exists():
            pane = _tmux(socket, "capture-pane", "-p").stdout
            if "spyglass live" in pane and "# the live hot line" in pane:
                seen = pane
                break
            time.sleep(0.2)
        stop_file.touch()
        deadline = time.monotonic() + 120
        while not status_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        final = _tmux(socket, "capture-pane", "-p", "-S", "-200").stdout
    finally:
        _tmux(socket, "kill-server")
    assert seen, "the live view never showed the hot line"
    hot_row = next(line for line in seen.splitlines() if "# the live hot line" in line)
    assert "live_spin.py:" in hot_row and "%" in hot_row, seen
    assert status_file.read_text().strip() == "0"
    # It was the live view: the program was still running, and ended when told to.
    assert "stopped by the test" in final, final
    # The view gave its rows back: the final report follows it as usual.
    after = final.split("stopped by the test")[-1]
    assert "spyglass live" not in after, final
    assert "spyglass · " in after and "Profile written to" in after, final
    assert out.exists()


def test_live_is_off_when_stderr_is_not_a_terminal(runner: Runner, tmp_path: Path) -> None:
    stop_file = tmp_path / "stop"
    stop_file.touch()  # the program ends at once
    proc, profile = runner.spyglass([SPIN, stop_file], options=["--live"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "stopped by the test\n"
    notes = [line for line in proc.stderr.splitlines() if "--live" in line]
    assert notes == [
        "spyglass: --live needs stderr to be a terminal: no live view, the report comes at the end"
    ]
    assert profile is not None
