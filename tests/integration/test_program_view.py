"""What the profiled program sees and shows is what it sees and shows under plain python: its
stdout byte for byte, its sys.argv, __name__, __file__ and sys.path[0], its own signal timer,
and blocking calls that return normally and on time."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import PROGRAMS_DIR, ProgramRun, Runner, program, stdout_json

STDOUT_PROGRAM = program("stdout_identity.py")
ARGV_PROGRAM = program("argv_main_check.py")


# ----------------------------------------------------------------------------- stdout


def test_stdout_is_byte_identical_to_plain_python(runner: Runner) -> None:
    plain = runner.python([STDOUT_PROGRAM], text=False)
    profiled, _ = runner.spyglass([STDOUT_PROGRAM], report=True, text=False)
    assert plain.returncode == 0 and profiled.returncode == 0, profiled.stderr
    assert len(plain.stdout) > 500_000
    assert "日本語".encode() in plain.stdout
    assert profiled.stdout == plain.stdout, "stdout differs under spyglass"
    # The program's own stderr comes first; the report follows it.
    assert plain.stderr == b"to stderr\n"
    assert profiled.stderr.startswith(plain.stderr)
    assert b"spyglass" in profiled.stderr[len(plain.stderr) :], "no report on stderr"


def test_stdout_and_stderr_identical_without_report(runner: Runner) -> None:
    plain = runner.python([STDOUT_PROGRAM], text=False)
    profiled, _ = runner.spyglass([STDOUT_PROGRAM], text=False)
    assert profiled.stdout == plain.stdout
    assert profiled.stderr == plain.stderr


# ----------------------------------------------------------------------------- argv & co

ARGS = ["first", "--flag", "-o", "spaced out", "-m", "x"]  # look like options: must pass through


def forms(tmp: Path) -> dict[str, tuple[list[str], Path]]:
    """How to start argv_main_check.py: form -> (python's arguments, working directory)."""
    link = tmp / "linked_check.py"
    if not link.exists():
        link.symlink_to(ARGV_PROGRAM)
    return {
        "script, relative path": (
            [f"{PROGRAMS_DIR.name}/{ARGV_PROGRAM.name}", *ARGS],
            PROGRAMS_DIR.parent,
        ),
        "script, absolute path": ([str(ARGV_PROGRAM), *ARGS], tmp),
        "script, through a symlink": ([link.name, *ARGS], tmp),
        "-m module": (["-m", ARGV_PROGRAM.stem, *ARGS], PROGRAMS_DIR),
        "-c code": (["-c", ARGV_PROGRAM.read_text(encoding="utf-8"), *ARGS], tmp),
    }


FORMS = [
    "script, relative path",
    "script, absolute path",
    "script, through a symlink",
    "-m module",
    "-c code",
]


@pytest.mark.parametrize("form", FORMS)
def test_argv_name_file_and_path0_match_plain_python(runner: Runner, form: str) -> None:
    args, cwd = forms(runner.workdir)[form]
    plain = runner.python(args, cwd=cwd)
    profiled, profile = runner.spyglass(args, cwd=cwd)
    assert plain.returncode == 0, plain.stderr
    assert profiled.returncode == 0, profiled.stderr
    seen_plain, seen_profiled = stdout_json(plain), stdout_json(profiled)
    assert seen_plain["argv"][1:] == ARGS
    assert seen_plain["main_is_this_module"] is True
    for key in ("argv", "name", "file", "path0", "main_is_this_module"):
        assert seen_profiled[key] == seen_plain[key], (
            f"{form}: {key} is {seen_profiled[key]!r} under spyglass, "
            f"{seen_plain[key]!r} under plain python"
        )
    assert profile is not None
    assert profile["argv"] == seen_plain["argv"], "the profile's argv is not the program's"


# ----------------------------------------------------------------------------- signals


def test_programs_own_sigalrm_timer_keeps_firing(runner: Runner) -> None:
    proc, _ = runner.spyglass([program("own_sigalrm_timer.py")])
    assert proc.returncode == 0, proc.stderr
    report = stdout_json(proc)
    print(f"\nown SIGALRM timer under spyglass: {report}")
    assert report["handler_installed"] is True
    assert report["timer_interval_s"] == pytest.approx(0.02, abs=0.001)
    for phase in ("python", "native"):
        # 10 firings every 20 ms: 0.2 s; 2 s means the timer is (nearly) dead.
        assert report[phase]["fired"] == 10, f"{phase} phase: {report[phase]}"
        assert report[phase]["elapsed_s"] < 2.0, f"{phase} phase: {report[phase]}"
    # A 0.25 s sleep under a 20 ms timer: about 12 firings, and the sleep runs its full time.
    assert report["sleep"]["fired"] >= 5, report["sleep"]
    assert report["sleep"]["elapsed_s"] >= 0.25, report["sleep"]


BLOCKING_CALLS = [
    "time.sleep",
    "select.select",
    "os.read",
    "socket.recv",
    "queue.get timeout",
    "queue.get",
]


@pytest.mark.parametrize("call", BLOCKING_CALLS)
def test_blocking_call_returns_normally_and_not_early(blocking_run: ProgramRun, call: str) -> None:
    proc, _ = blocking_run
    results = stdout_json(proc)
    assert sorted(results) == sorted(BLOCKING_CALLS)
    result = results[call]
    assert result["error"] is None, f"{call} raised under spyglass: {result['error']}"
    assert result["ok"] is True, f"{call} returned a wrong result: {result}"
    assert result["early_by_s"] == 0, f"{call} returned {result['early_by_s']:.4f}s early"
    assert result["elapsed_s"] < 3.0, f"{call} blocked far too long: {result}"


def test_no_eintr_anywhere(blocking_run: ProgramRun) -> None:
    proc, _ = blocking_run
    assert "EINTR" not in proc.stdout + proc.stderr
    assert "Interrupted system call" not in proc.stdout + proc.stderr
