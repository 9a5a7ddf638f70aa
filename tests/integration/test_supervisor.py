"""`spyglass run` runs the program in an interpreter of its own and waits for it: the
program sees what plain python shows (no spyglass frames under its own, its own pid in
its profile), a program killed with SIGKILL or crashing still has its profile, signals
sent to spyglass reach the program, and killing spyglass does not leave it running.

Each test runs twice: under `python -m spyglass`, and under the installed `spyglass`
command, the native launcher that starts the program before the supervisor's own
interpreter has started (skipped when spyglass runs from the source tree)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import Runner, describe, launcher, line_figures, program, sigint_default

PROGRAM = program("supervised.py")


@pytest.fixture(params=["python-m", "launcher"], autouse=True)
def command(request: pytest.FixtureRequest, runner: Runner) -> list[str]:
    """The command under test, which the runner uses too."""
    if request.param == "launcher":
        path = launcher()
        if path is None:
            pytest.skip("spyglass runs from the source tree: no launcher installed")
        runner.command = [str(path)]
    else:
        runner.command = [sys.executable, "-m", "spyglass"]
    return runner.command


def _profile_work(profile: dict[str, object]) -> None:
    work = line_figures(profile, PROGRAM, "# supervised:work")
    assert work["samples"] >= 5, describe(work)


def test_the_program_sees_no_spyglass_frames_and_profiles_its_own_pid(runner: Runner) -> None:
    plain = runner.python([PROGRAM, "plain"])
    proc, profile = runner.spyglass([PROGRAM, "plain"])
    assert profile is not None
    assert proc.returncode == plain.returncode == 0, proc.stderr
    stack = [ln for ln in proc.stdout.splitlines() if ln.startswith("stack")]
    assert stack == [ln for ln in plain.stdout.splitlines() if ln.startswith("stack")]
    assert stack == ["stack ['<module>']"], stack
    pid = int(proc.stdout.split()[1])
    assert profile["pid"] == pid and profile["processes"][0]["pid"] == pid
    assert profile["exit_status"] == 0
    _profile_work(profile)


@pytest.mark.parametrize("flags", [[], ["--cpu-only"]])
def test_a_program_killed_with_sigkill_keeps_its_profile(runner: Runner, flags: list[str]) -> None:
    proc, profile = runner.spyglass([PROGRAM, "sigkill"], options=flags)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert profile is not None
    assert profile["processes"][0]["recovered"] is True
    assert profile["exit_status"] is None
    _profile_work(profile)


def _start(
    command: list[str], tmp_path: Path, case: str, **kwargs: object
) -> tuple[subprocess.Popen[str], Path]:
    marker = tmp_path / "ready"
    out = tmp_path / "p.json"
    cmd = [*command, "run", "--no-report", "-o", str(out)]
    kwargs.setdefault("preexec_fn", sigint_default)
    proc = subprocess.Popen(
        [*cmd, str(PROGRAM), case, str(marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,  # type: ignore[call-overload]
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the program never got ready"
        time.sleep(0.02)
    return proc, out


def test_sigterm_sent_to_spyglass_reaches_the_program(command: list[str], tmp_path: Path) -> None:
    proc, out = _start(command, tmp_path, "sigterm-handled")
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert "got SIGTERM" in stdout, stderr
    assert proc.returncode == 0, stderr
    profile = json.loads(out.read_text(encoding="utf-8"))
    _profile_work(profile)


def test_ctrl_c_interrupts_the_program_once(command: list[str], tmp_path: Path) -> None:
    """A Ctrl-C at a terminal signals the whole foreground process group: spyglass lets
    the program have it, and does not pass on a second one. A real terminal (a pty) sends
    it here, as the kernel does for a keyboard."""
    import fcntl
    import termios

    master, slave = os.openpty()

    def controlling_terminal() -> None:
        sigint_default()
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    try:
        proc, out = _start(
            command, tmp_path, "interrupted", stdin=slave, preexec_fn=controlling_terminal
        )
        os.write(master, b"\x03")  # Ctrl-C
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        os.close(master)
        os.close(slave)
    assert stdout.count("KeyboardInterrupt once") == 1 and "cleaned up" in stdout, stderr
    assert proc.returncode == 0, stderr
    _profile_work(json.loads(out.read_text(encoding="utf-8")))


def test_killing_spyglass_takes_the_program_with_it(command: list[str], tmp_path: Path) -> None:
    proc, _ = _start(command, tmp_path, "wait")
    pid = int((tmp_path / "ready").read_text())
    proc.kill()
    proc.communicate(timeout=60)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    pytest.fail("the program outlived spyglass")


def test_only_the_program_is_told_to_die_with_spyglass(runner: Runner, tmp_path: Path) -> None:
    """The request to die with the supervisor is made by the program's bootstrap, from a
    variable it then removes: neither the program nor its children see it, and a child
    (whose parent is not the supervisor) is not killed by it."""
    script = tmp_path / "env.py"
    script.write_text(
        "import os, subprocess, sys\n"
        "print('program', os.environ.get('SPYGLASS_SUPERVISOR'))\n"
        'code = \'import os; print("child", os.environ.get("SPYGLASS_SUPERVISOR"))\'\n'
        "sys.exit(subprocess.call([sys.executable, '-c', code]))\n",
        encoding="utf-8",
    )
    proc, profile = runner.spyglass([str(script)])
    assert profile is not None
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == ["None", "None", "child", "program"], proc.stdout
    assert len(profile["processes"]) == 2, profile["processes"]


@pytest.mark.parametrize(
    "signum", [signal.SIGPWR, signal.SIGPROF, signal.SIGRTMIN + 3], ids=["PWR", "PROF", "RTMIN+3"]
)
def test_signals_the_program_handles_reach_it(
    command: list[str], tmp_path: Path, signum: int
) -> None:
    """A signal whose default action ends a process, sent to spyglass: it ended spyglass,
    and the program was killed with it, unprofiled, though it handled the signal."""
    proc, out = _start(command, tmp_path, f"handles-{int(signum)}")
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    assert f"got {int(signum)}" in stdout, (proc.returncode, stderr)
    assert proc.returncode == 0, stderr
    _profile_work(json.loads(out.read_text(encoding="utf-8")))


def test_sigint_sent_to_spyglass_reaches_the_program(command: list[str], tmp_path: Path) -> None:
    """kill -INT, Popen.send_signal(SIGINT) and IDE stop buttons signal spyglass alone."""
    proc, out = _start(command, tmp_path, "interrupted")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert stdout.count("KeyboardInterrupt once") == 1 and "cleaned up" in stdout, stderr
    assert proc.returncode == 0, stderr
    _profile_work(json.loads(out.read_text(encoding="utf-8")))


def _new_group() -> None:
    sigint_default()
    os.setpgid(0, 0)


@pytest.mark.parametrize("also_to_spyglass", [False, True], ids=["group", "spyglass-then-group"])
def test_sigint_sent_to_the_process_group_interrupts_the_program_once(
    command: list[str], tmp_path: Path, also_to_spyglass: bool
) -> None:
    """`kill -INT -- -PGID` and process managers signal every process of the group, and
    `timeout -s INT` signals spyglass, then the group: the program gets it from its
    sender and from spyglass, which cannot tell such a signal from one sent to it alone.
    The program sees one, not a second in the middle of its cleanup."""
    for attempt in range(3):  # the copies' order varies from run to run
        proc, out = _start(command, tmp_path, "interrupted", preexec_fn=_new_group)
        if also_to_spyglass:
            proc.send_signal(signal.SIGINT)
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        assert stdout.count("KeyboardInterrupt once") == 1 and "cleaned up" in stdout, stderr
        assert proc.returncode == 0, (attempt, stderr)
        assert "Traceback" not in stderr, stderr
        _profile_work(json.loads(out.read_text(encoding="utf-8")))
        (tmp_path / "ready").unlink()


def test_a_handler_the_program_sets_gets_a_group_sigint_once(
    command: list[str], tmp_path: Path
) -> None:
    """signal.signal replaces the interpreter's handler, and with it the wrapper that
    matches the two copies: the wrapper is put back."""
    proc, _ = _start(command, tmp_path, "counts-sigint", preexec_fn=_new_group)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert "SIGINTs 1" in stdout, (stdout, stderr)
    assert proc.returncode == 0, stderr


def test_a_sigint_the_program_sends_itself_is_delivered(command: list[str], tmp_path: Path) -> None:
    """One that comes just after one spyglass passed on is the program's own, not an echo
    of it (a server's shutdown putting the default handler back and sending it again)."""
    proc, _ = _start(command, tmp_path, "interrupts-itself")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert "interrupted by itself" in stdout, (stdout, stderr)
    assert proc.returncode == 0, stderr


def test_exit_status_is_kept_when_sigchld_is_ignored(runner: Runner, tmp_path: Path) -> None:
    """Whoever starts spyglass may leave SIGCHLD ignored, which children inherit."""
    out = tmp_path / "p.json"
    script = tmp_path / "three.py"
    script.write_text("import sys\nsys.exit(3)\n", encoding="utf-8")
    done = subprocess.run(
        [*runner.command, "run", "--no-report", "-o", str(out), str(script)],
        preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN),
        capture_output=True,
        text=True,
        env=runner.env,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["exit_status"] == 3


def test_a_script_read_from_a_pipe_runs(runner: Runner, tmp_path: Path) -> None:
    """`spyglass run <(...)`: a pipe can be read once, and the program must be the one."""
    fifo = tmp_path / "script.py"
    os.mkfifo(fifo)
    import threading

    def feed() -> None:
        with open(fifo, "w", encoding="utf-8") as f:
            f.write("print('from a pipe')\n")

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    proc, profile = runner.spyglass([fifo])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "from a pipe\n"
    assert profile is not None


def test_a_dotted_module_runs_its_package_once(runner: Runner, tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("print('package imported')\n", encoding="utf-8")
    (pkg / "sub.py").write_text("print('sub runs')\n", encoding="utf-8")
    plain = runner.python(["-m", "pkg.sub"], cwd=tmp_path)
    proc, profile = runner.spyglass(["-m", "pkg.sub"], cwd=tmp_path)
    assert plain.stdout == "package imported\nsub runs\n"
    assert proc.stdout == plain.stdout, proc.stderr
    assert profile is not None
