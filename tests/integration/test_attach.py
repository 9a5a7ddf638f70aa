"""`spyglass attach PID`: a plain python service, started without spyglass, profiled twice
for 2 s while it runs, and after that still answering, handling its own signals and ending
with its own status; and one clear line for what cannot be attached to."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import Runner, figures_at, load_profile, program, source_lineno
from spyglass.runtime.attach_target import GDB_CANNOT_CALL

SERVICE = program("attach_service.py")
ERROR_LINE = re.compile(r"^spyglass: error: [^\n]+\n$")


@pytest.fixture(scope="module")
def gdb_can_call() -> None:
    """Skips when gdb cannot call a function in a stopped process on this system at all
    (with gdb 13 on some kernels it cannot write the registers back): asked of a process
    of no spyglass's, so that a failure of spyglass's own injection still fails."""
    gdb = shutil.which("gdb")
    if gdb is None:
        pytest.skip("no gdb")
    idle = subprocess.Popen(["sleep", "60"])
    try:
        done = subprocess.run(
            [gdb, "-nx", "-batch", "-p", str(idle.pid), "-ex", "call (int) getpid()"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        idle.kill()
        idle.wait()
    if GDB_CANNOT_CALL in done.stdout + done.stderr:
        pytest.skip(f"gdb cannot call into a process here: {GDB_CANNOT_CALL}")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, str(SERVICE)],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _ask(proc: subprocess.Popen[str], line: str) -> str:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    return proc.stdout.readline()


def _spins(proc: subprocess.Popen[str]) -> int:
    answer = _ask(proc, "ping")
    assert answer.startswith("pong "), answer
    return int(answer.split()[1])


@pytest.mark.slow
def test_attach_profiles_a_running_service_and_leaves_it_as_it_was(
    runner: Runner, service: subprocess.Popen[str], tmp_path: Path, gdb_can_call: None
) -> None:
    hot = source_lineno(SERVICE, "the hot line")
    spins = _spins(service)
    for attempt in (1, 2):  # the second attach comes after the first detached
        out = tmp_path / f"attach-{attempt}.json"
        done = runner.spyglass_cli(
            ["attach", str(service.pid), "--duration", "2", "-o", out, "--no-color"]
        )
        assert done.returncode == 0, done.stderr
        assert "memory counts only what it allocated since" in done.stderr
        profile = load_profile(out)
        assert profile["attached"] is True and profile["pid"] == service.pid
        # The hot line is the hottest of the service's lines.
        lines = profile["files"][str(SERVICE)]["lines"]
        hottest = max(lines, key=lambda x: x["cpu_python_s"] + x["cpu_native_s"])
        assert hottest["lineno"] == hot, lines
        assert figures_at(profile, SERVICE, hot)["cpu_python_s"] > 0.1
        assert "answerer" in [t.get("name") for t in profile["threads"]]
        # Still running and answering: it spun on since.
        now = _spins(service)
        assert now > spins
        spins = now
    # Its own signal handler, its own output, its own exit status.
    assert _ask(service, "ping").startswith("pong ")
    service.send_signal(__import__("signal").SIGUSR1)
    assert service.stdout is not None and service.stdout.readline() == "usr1\n"
    assert _ask(service, "quit") == "bye\n"
    assert service.wait(timeout=60) == 3
    assert service.stderr is not None and service.stderr.read() == ""


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert ERROR_LINE.match(done.stderr), done.stderr
    return done.stderr


def test_attach_to_a_process_that_is_not_python(runner: Runner) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        done = runner.spyglass_cli(["attach", str(sleeper.pid), "--duration", "1"])
        assert "is not a Python process" in _one_line(done)
        assert sleeper.poll() is None  # untouched
    finally:
        sleeper.kill()
        sleeper.wait()


def test_attach_to_a_dead_pid(runner: Runner) -> None:
    ended = subprocess.Popen(["true"])
    ended.wait()
    done = runner.spyglass_cli(["attach", str(ended.pid), "--duration", "1"])
    assert f"no process with pid {ended.pid}" in _one_line(done)


def _pyenv_python(version: str) -> str | None:
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = sorted(Path(root, "versions").glob(f"{version}.*/bin/python{version}"))
    return str(found[-1]) if found else shutil.which(f"python{version}")


def _has_spyglass(python: str) -> bool:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    probe = subprocess.run(
        [python, "-c", "import spyglass._native"], capture_output=True, env=env, timeout=60
    )
    return probe.returncode == 0


@pytest.mark.parametrize("version", ["3.8", "3.10", "3.12"])
def test_attach_to_a_python_spyglass_is_not_installed_for(runner: Runner, version: str) -> None:
    python = _pyenv_python(version)
    if python is None or version == "{}.{}".format(*sys.version_info[:2]):
        pytest.skip(f"no other Python {version} on this machine")
    if version != "3.8" and _has_spyglass(python):
        pytest.skip(f"spyglass is installed for Python {version} here")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    idle = subprocess.Popen([python, "-c", "import time; time.sleep(60)"], env=env)
    try:
        line = _one_line(runner.spyglass_cli(["attach", str(idle.pid), "--duration", "1"]))
        if version == "3.8":
            assert f"runs Python {version}, which spyglass does not profile" in line
        else:
            assert f"spyglass is not installed for the Python {version}" in line
        assert idle.poll() is None  # untouched
    finally:
        idle.kill()
        idle.wait()


@pytest.mark.slow
def test_attach_to_a_program_spyglass_run_profiles(
    runner: Runner, tmp_path: Path, gdb_can_call: None
) -> None:
    out = str(tmp_path / "r.json")
    run = subprocess.Popen(
        [sys.executable, "-m", "spyglass", "run", "--no-report", "-o", out, str(SERVICE)],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert run.stdout is not None and run.stdout.readline() == "ready\n"
        with open(f"/proc/{run.pid}/task/{run.pid}/children", encoding="utf-8") as f:
            (program_pid,) = map(int, f.read().split())
        done = runner.spyglass_cli(["attach", str(program_pid), "--duration", "1"])
        assert "already being profiled by spyglass" in _one_line(done)
        # The run goes on, and ends as it would have.
        assert _ask(run, "ping").startswith("pong ")
        assert _ask(run, "quit") == "bye\n"
        assert run.wait(timeout=120) == 3
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
