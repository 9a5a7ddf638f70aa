"""The `spyglass` command is a native launcher (src/native/launcher) that starts the
program and the supervisor's interpreter at once. It reads the command line without
Python's parser: it must find the same target as the Python side, or leave the line to
it; the supervisor adopts the program only when it is the one it would have started, and
otherwise ends it before any of its code has run.

Skipped where spyglass runs from the source tree (no launcher is built there); the
README's test command installs the package, and requires the launcher."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import Runner, launcher, sigint_default, stdout_json
from spyglass.cli.run import _split_target_args
from spyglass.cli.run_quick_args import FLAGS, VALUE_OPTIONS, parse


@pytest.fixture
def spyglass_command() -> Path:
    path = launcher()
    if path is None:
        pytest.skip("spyglass runs from the source tree: no launcher installed")
    return path


def _launcher_target(command: Path, args: list[str]) -> int:
    env = dict(os.environ, SPYGLASS_LAUNCHER_DRY_RUN="1")
    done = subprocess.run(
        [str(command), *args], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    facts = dict(line.split("=", 1) for line in done.stdout.splitlines())
    target = int(facts["target"])
    if target >= 0:
        assert facts["bootstrap"].endswith("spyglass/runtime/bootstrap"), facts
    return target


def _command_lines() -> list[list[str]]:
    """Every option the Python side reads without argparse, and the awkward cases."""
    lines = [["run", flag, "app.py", "--flag", "x"] for flag in FLAGS]
    lines += [["run", option, "v", "-m", "json.tool", "-o"] for option in VALUE_OPTIONS]
    lines += [
        ["run", "-c", "pass", "-m", "x"],
        ["run", "--html", "app.py"],
        ["run", "--html", "r.html", "app.py"],
        ["run", "--html=r.txt", "--cpu-only", "app.py"],
        ["run", "-o", "-", "app.py"],
        ["run", "-o", "--cpu-only", "app.py"],
        ["run", "-", "a"],
        ["run", "--", "app.py"],
        ["run", "--cpu-only", "--", "app.py", "-o", "x"],
        ["run", "--", "-app.py"],
        ["run", "--"],
        ["run", "-mjson.tool"],
        ["run", "--htm", "app.py"],
        ["run", "--help"],
        ["run", "-h", "app.py"],
        ["run", "--interval"],
        ["run"],
        ["view", "p.json"],
        ["--version"],
    ]
    return lines


def test_the_launcher_finds_the_target_the_python_side_finds(spyglass_command: Path) -> None:
    for argv in _command_lines():
        index = _launcher_target(spyglass_command, argv)
        if argv[0] != "run":
            assert index == -1, argv
            continue
        ours, rest = _split_target_args(argv[1:])
        quick = parse(ours)
        what = 2 if ours[-2:-1] in (["-m"], ["-c"]) else 1
        full = ["spyglass", *argv]
        # The usual lines must take the fast path: a target found, and written as python
        # takes it (not an attached -mMODULE, which the launcher leaves to Python).
        usual = quick is not None and (
            quick.module or quick.code or quick.program not in (None, "-")
        )
        if usual and full[len(full) - len(rest) - what :] == ours[-what:] + rest:
            assert index >= 0, argv
        if index >= 0:
            # The program the launcher starts is the one the supervisor would start.
            assert full[index:] == ours[-what:] + rest, argv
            assert [a for a in full[2:index] if a != "--html"] == [
                a for a in ours[:-what] if a not in ("--html", "--html=")
            ], argv


def test_the_launched_program_is_adopted_and_runs_as_under_python(
    runner: Runner, spyglass_command: Path, tmp_path: Path
) -> None:
    script = tmp_path / "show.py"
    script.write_text(
        "import os, sys\n"
        "print(sys.argv[1:], sys.path[0] == os.path.dirname(os.path.abspath(__file__)))\n"
        "print('ppid', os.getppid(), 'pid', os.getpid())\n"
        "names = ['LAUNCHED', 'CONFIG_FD', 'SUPERVISOR', 'CHILD_CONFIG', 'SUPERVISOR_SITE']\n"
        "print('env', [n for n in names if 'SPYGLASS_' + n in os.environ])\n"
        "with open(f'/proc/{os.getppid()}/cmdline', 'rb') as f:\n"
        "    parent = f.read().split(b'\\0')\n"
        "print('site', sys.flags.no_site, 'site' in sys.modules, b'-S' in parent[1:2])\n"
        "x = sum(i * i for i in range(2_000_000))\n"
        "sys.exit(5)\n",
        encoding="utf-8",
    )
    out = tmp_path / "p.json"
    env = dict(runner.env, SPYGLASS_DEBUG_LAUNCHER="1")
    proc = subprocess.Popen(
        [str(spyglass_command), "run", "--no-report", "-o", str(out), str(script), "a", "-o"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 5, stderr
    assert "the launched program is adopted" in stderr, stderr
    lines = stdout.splitlines()
    assert lines[0] == "['a', '-o'] True", stdout
    # Its parent is the supervisor, the launcher's own process.
    assert lines[1].startswith(f"ppid {proc.pid} pid "), stdout
    # Only the run's configuration is left: the launcher's variables are gone.
    assert lines[2] == "env ['CHILD_CONFIG']", stdout
    # The supervisor starts without site (it costs the run's CPU); the program with it, as
    # plain python would run it.
    assert lines[3] == "site 0 True True", stdout
    import json

    profile = json.loads(out.read_text(encoding="utf-8"))
    assert profile["exit_status"] == 5
    assert [p["pid"] for p in profile["processes"]] == [int(lines[1].split()[-1])]


def test_a_module_on_pythonpath_runs_through_the_launcher(
    runner: Runner, spyglass_command: Path, tmp_path: Path
) -> None:
    """The supervisor's own sys.path keeps the user's PYTHONPATH whole (its first entry
    is where `-m` is looked for)."""
    lib = tmp_path / "lib"
    (lib / "mypkg").mkdir(parents=True)
    (lib / "mypkg" / "__init__.py").write_text("", encoding="utf-8")
    (lib / "mypkg" / "tool.py").write_text("print('tool ran')\n", encoding="utf-8")
    env = dict(runner.env, SPYGLASS_DEBUG_LAUNCHER="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(lib), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [
            str(spyglass_command),
            "run",
            "--no-report",
            "-o",
            str(tmp_path / "p.json"),
            "-m",
            "mypkg.tool",
        ],
        env=env,
        cwd=tmp_path / "lib" / "mypkg",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "tool ran\n"
    assert "adopted" in done.stderr


def test_a_module_only_a_pth_file_leads_to_runs_through_the_launcher(
    runner: Runner, spyglass_command: Path, tmp_path: Path
) -> None:
    """The supervisor starts without site: a `-m` target found only through a .pth file
    of the installation's site directory (an editable install's, say) is still found."""
    import uuid

    import spyglass

    site_dir = Path(spyglass.__file__).resolve().parent.parent
    if not os.access(site_dir, os.W_OK):
        pytest.skip(f"{site_dir} is not writable")
    name = f"pth_only_{uuid.uuid4().hex[:12]}"
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / f"{name}.py").write_text("print('found through a .pth file')\n", encoding="utf-8")
    pth = site_dir / f"{name}.pth"
    pth.write_text(f"{lib}\n", encoding="utf-8")
    try:
        done = subprocess.run(
            [
                str(spyglass_command),
                "run",
                "--no-report",
                "-o",
                str(tmp_path / "out.json"),
                "-m",
                name,
            ],
            env=dict(runner.env, SPYGLASS_DEBUG_LAUNCHER="1"),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        pth.unlink()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "found through a .pth file\n"
    assert "adopted" in done.stderr


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ([], "can't open file"),
        (["--interval", "99"], "--interval"),
        (["-o", "nodir/p.json"], "nodir"),
        (["--cpu-only", "--memory"], "not allowed with"),
    ],
)
def test_an_error_ends_the_launched_program_before_its_code_runs(
    runner: Runner, spyglass_command: Path, tmp_path: Path, options: list[str], message: str
) -> None:
    marker = tmp_path / "ran"
    script = tmp_path / "mark.py"
    if options:
        script.write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    done = subprocess.run(
        [str(spyglass_command), "run", *options, str(script)],
        env=runner.env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stdout == ""
    assert not marker.exists()


def test_without_the_fast_start_the_python_side_starts_the_program(
    runner: Runner, spyglass_command: Path, tmp_path: Path
) -> None:
    env = dict(runner.env, SPYGLASS_DEBUG_LAUNCHER="1", SPYGLASS_NO_FAST_START="1")
    out = tmp_path / "p.json"
    done = subprocess.run(
        [str(spyglass_command), "run", "--no-report", "-o", str(out), "-c", "print('hi')"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hi\n" and "launched program" not in done.stderr, done.stderr
    assert out.exists()


def test_other_commands_go_to_the_python_command_line(
    runner: Runner, spyglass_command: Path
) -> None:
    from spyglass import __version__

    done = subprocess.run(
        [str(spyglass_command), "--version"], env=runner.env, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout == f"spyglass {__version__}\n", done.stderr
    done = subprocess.run(
        [str(spyglass_command), "view", "missing.json"],
        env=runner.env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "missing.json" in done.stderr, done.stderr


def test_code_with_stdout_closed_is_adopted_and_sees_what_python_shows(
    runner: Runner, spyglass_command: Path, tmp_path: Path
) -> None:
    """With its stdout closed, a program has no sys.stdout, as under plain python: the
    launcher's pipe does not take the free descriptor."""
    seen = tmp_path / "seen"
    code = f"import sys; open({str(seen)!r}, 'w').write(repr(sys.stdout is None))"
    env = dict(runner.env, SPYGLASS_DEBUG_LAUNCHER="1")
    out = tmp_path / "p.json"
    done = subprocess.run(
        [str(spyglass_command), "run", "--no-report", "-o", str(out), "-c", code],
        env=env,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.close(1),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "adopted" in done.stderr, done.stderr
    plain = seen.read_text(encoding="utf-8")
    seen.unlink()
    subprocess.run([sys.executable, "-c", code], preexec_fn=lambda: os.close(1), check=True)
    assert plain == seen.read_text(encoding="utf-8") == "True"
    assert out.exists()


def _interrupted_at(
    runner: Runner, spyglass_command: Path, tmp_path: Path, delay_s: float, sleep_s: int
) -> tuple[int, str]:
    """Runs a script that sleeps `sleep_s` under spyglass, sends SIGINT to spyglass after
    `delay_s`, and returns the exit status and stderr."""
    import time

    script = tmp_path / "slow.py"
    script.write_text(f"import time\ntime.sleep({sleep_s})\n", encoding="utf-8")
    proc = subprocess.Popen(
        [str(spyglass_command), "run", "--no-report", "-o", str(tmp_path / "p.json"), script],
        env=runner.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    )
    if delay_s:
        time.sleep(delay_s)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    return proc.returncode, stderr


def _ended_of_sigint(returncode: int, stderr: str) -> bool:
    # Killed before its first line, or interrupted in it (the sleep) if it got that far.
    return returncode == -signal.SIGINT or (returncode == 1 and "KeyboardInterrupt" in stderr)


def test_ctrl_c_while_the_program_starts_ends_the_run_of_it(
    runner: Runner, spyglass_command: Path, tmp_path: Path
) -> None:
    """SIGINT sent to spyglass at once (before the supervisor's interpreter runs) is kept
    and passed on: the run ends of it, without a fatal error from the program's start and
    without a traceback of spyglass's own."""
    returncode, stderr = _interrupted_at(runner, spyglass_command, tmp_path, 0, 30)
    assert "Fatal Python error" not in stderr, stderr
    assert "spyglass/" not in stderr, stderr
    assert _ended_of_sigint(returncode, stderr), (returncode, stderr)


def test_ctrl_c_at_any_moment_of_the_start_ends_the_run(
    runner: Runner, spyglass_command: Path, tmp_path: Path
) -> None:
    """SIGINT at moments spread over the program's start: every run ends of it. A Ctrl-C
    that came while the profiler started (in its GPU probe, say) was raised in Python the
    profiler ran and cleared as its own error, and one that came in CPython's own start-up
    after site was printed and dropped ("Failed checking if argv[0] is an import path
    entry"): the program ran on to its end, exit status 0, about 1 run in 20."""
    outcomes = []
    for step in range(40):
        returncode, stderr = _interrupted_at(runner, spyglass_command, tmp_path, step * 0.002, 10)
        outcomes.append((step * 2, returncode, _ended_of_sigint(returncode, stderr), stderr[-300:]))
    lost = [o for o in outcomes if not o[2]]
    assert not lost, lost


def test_a_program_not_adopted_is_killed_and_reaped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The supervisor's side on its own: a launched program whose command is not the one
    the supervisor would run is ended."""
    from spyglass.runtime import launched

    monkeypatch.setattr(launched, "_pending", [])
    monkeypatch.setattr(launched, "_blocked_before", [])

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    read_end, write_end = os.pipe()
    os.close(read_end)
    bootstrap = str(Path(launched.__file__).parent / "bootstrap")
    monkeypatch.setenv(launched.LAUNCHED_ENV, f"{child.pid}:{write_end}:1:2:{bootstrap}")
    monkeypatch.setattr(sys, "argv", ["-c", "other.py"])
    launched.take()
    assert launched.LAUNCHED_ENV not in os.environ
    assert launched.claim([sys.executable, "app.py"], bootstrap) is None
    assert child.poll() is not None  # killed, and reaped by the claim
    assert launched.mask_before({10, 15, 17}, {15, 17, 2}) == {10, 2}
    child.wait()


def _blocking_sigint() -> None:
    sigint_default()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


@pytest.mark.parametrize("how", ["launcher", "python -m spyglass"])
@pytest.mark.parametrize("blocked", [False, True])
def test_the_program_has_the_signal_mask_spyglass_was_started_with(
    runner: Runner, tmp_path: Path, how: str, blocked: bool
) -> None:
    """The program starts with SIGINT blocked until its bootstrap holds it (one passed on
    sooner, in site's own imports, was a fatal error), then unblocked: its code sees the
    mask spyglass was started with, SIGINT blocked only if it was, and no trace of ours."""
    if how == "launcher":
        command = launcher()
        if command is None:
            pytest.skip("spyglass runs from the source tree: no launcher installed")
        argv = [str(command)]
    else:
        argv = [sys.executable, "-m", "spyglass"]
    script = tmp_path / "mask.py"
    script.write_text(
        "import json, os, signal\n"
        "mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])\n"
        "print(json.dumps({'sigint_blocked': signal.SIGINT in mask,\n"
        "                  'env': sorted(k for k in os.environ if 'SIGINT' in k)}))\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [*argv, "run", "--no-report", "-o", str(tmp_path / "p.json"), str(script)],
        env=runner.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_blocking_sigint if blocked else sigint_default,
    )
    assert proc.returncode == 0, proc.stderr
    seen = stdout_json(proc)
    assert seen == {"sigint_blocked": blocked, "env": []}, seen
