"""However the program ends, spyglass leaves with the program's own exit status, prints what
plain python prints, and writes the profile (with what ran before the end)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest

import spyglass
from helpers import Profile, Runner, function_figures, line_figures, program

# program -> (exit status as subprocess reports it, exit_status the profile must record or
# None where the format does not pin it down: death by a signal)
CASES: dict[str, tuple[int, Any]] = {
    "exit_normal.py": (0, 0),
    "exit_sys_exit.py": (3, 3),
    "exit_uncaught_exception.py": (1, 1),
    "exit_os_exit.py": (4, 4),
    "exit_keyboard_interrupt.py": (-signal.SIGINT, None),
    "exit_sigterm.py": (-signal.SIGTERM, None),
    # The interpreter ends daemon threads still running as it exits, unwinding them through
    # spyglass's native thread entries: that aborted the process (exit status 134).
    "exit_daemon_threads.py": (0, 0),
    "exit_daemon_threads_sys_exit.py": (3, 3),
}

Runs = tuple["subprocess.CompletedProcess[str]", "subprocess.CompletedProcess[str]", Profile]


@pytest.fixture(scope="module")
def exit_runs(make_runner: Callable[[str], Runner]) -> Callable[[str], Runs]:
    """Runs a program under plain python and under spyglass, once per module."""
    runner = make_runner("exits")
    cache: dict[str, Runs] = {}

    def get(name: str) -> Runs:
        if name not in cache:
            plain = runner.python([program(name)])
            profiled, profile = runner.spyglass([program(name)])
            assert profile is not None
            cache[name] = (plain, profiled, profile)
        return cache[name]

    return get


@pytest.mark.parametrize("name", sorted(CASES))
def test_exit_status_is_the_programs_own(exit_runs: Callable[[str], Runs], name: str) -> None:
    plain, profiled, _ = exit_runs(name)
    expected, _ = CASES[name]
    assert plain.returncode == expected, f"plain python: {plain.returncode} ({plain.stderr})"
    assert profiled.returncode == expected, (
        f"{name} under spyglass: exit status {profiled.returncode}, plain python {expected}"
        f"\nstderr:\n{profiled.stderr}"
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_profile_is_written_with_the_work_done_before_exit(
    exit_runs: Callable[[str], Runs], name: str
) -> None:
    _, _, profile = exit_runs(name)
    _, recorded = CASES[name]
    work = function_figures(profile, "work", program(name))
    assert work["samples"] >= 2, f"the work before the exit is missing: {work}"
    assert line_figures(profile, program(name), "# exit:work")["samples"] >= 1
    if recorded is not None:
        assert profile["exit_status"] == recorded


@pytest.mark.parametrize("name", sorted(CASES))
def test_stdout_is_what_plain_python_prints(exit_runs: Callable[[str], Runs], name: str) -> None:
    plain, profiled, _ = exit_runs(name)
    assert plain.stdout.startswith("before ")
    assert profiled.stdout == plain.stdout


@pytest.mark.parametrize("name", ["exit_os_exit.py", "exit_sigterm.py"])
def test_output_plain_python_loses_is_lost_with_the_report_on(runner: Runner, name: str) -> None:
    """os._exit and death by SIGTERM drop what is still in stdout's buffer; under spyglass
    (report on, as by default) the program's stdout must be the same."""
    plain = runner.python([program(name)])
    profiled, _ = runner.spyglass([program(name)], report=True)
    assert "lost:" not in plain.stdout, "plain python flushed the buffer: test is moot"
    assert profiled.returncode == plain.returncode
    assert profiled.stdout == plain.stdout, "spyglass flushed output the program would lose"


TRACEBACK_CASES = ["exit_uncaught_exception.py", "exit_keyboard_interrupt.py"]


def traceback_of(stderr: str) -> list[str]:
    """The lines of the (last) traceback in `stderr`, from its header to the exception line."""
    lines = stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line == "Traceback (most recent call last):"]
    assert starts, f"no traceback in:\n{stderr}"
    block = lines[starts[-1] :]
    end = next(i for i, line in enumerate(block) if i > 0 and not line.startswith(" "))
    return block[: end + 1]


def is_spyglass_frame(line: str) -> bool:
    """Whether a traceback's `File "…"` line is in spyglass's own package (its bootstrap
    included) or in runpy, which runs `-m` targets: decided by where the file is, not by
    its name, so that a checkout or a virtual environment named "spyglass" is no frame of
    spyglass's."""
    found = re.match(r'\s+File "([^"]+)"', line)
    if found is None:
        return False
    path = found.group(1)
    if path in ("<frozen runpy>",) or os.path.basename(path) == "runpy.py":
        return True
    package = Path(spyglass.__file__).resolve().parent
    return Path(path).resolve().is_relative_to(package) if path.startswith("/") else False


def test_own_frames_are_found_by_where_they_are(tmp_path: Path) -> None:
    package = Path(spyglass.__file__).resolve().parent
    checkout = tmp_path / "spyglass" / "tests" / "programs" / "spyglass_app.py"
    assert not is_spyglass_frame(f'  File "{checkout}", line 3, in <module>')
    assert is_spyglass_frame(f'  File "{package / "runtime" / "session.py"}", line 9, in stop')
    bootstrap = package / "runtime" / "bootstrap" / "sitecustomize.py"
    assert is_spyglass_frame(f'  File "{bootstrap}", line 1, in <module>')
    assert is_spyglass_frame('  File "<frozen runpy>", line 198, in _run_module_as_main')


@pytest.mark.parametrize("name", TRACEBACK_CASES)
def test_traceback_is_printed_as_python_prints_it(
    exit_runs: Callable[[str], Runs], name: str
) -> None:
    plain, profiled, _ = exit_runs(name)
    expected = traceback_of(plain.stderr)
    got = traceback_of(profiled.stderr)
    assert got[-1] == expected[-1], "the exception line differs"
    frames = [line for line in got if re.match(r'\s+File "', line)]
    own = [line for line in frames if is_spyglass_frame(line)]
    assert not own, f"spyglass's own frames in the traceback: {own}"
    assert frames == [line for line in expected if re.match(r'\s+File "', line)]
    assert got == expected


def test_sys_exit_prints_nothing_extra(exit_runs: Callable[[str], Runs]) -> None:
    plain, profiled, _ = exit_runs("exit_sys_exit.py")
    assert plain.stderr == ""
    assert profiled.stderr == "", "spyglass --no-report printed something on stderr"


@pytest.mark.parametrize("flags", [[], ["--cpu-only"]])
def test_a_sent_sigsegv_kills_as_without_spyglass(
    make_runner: Callable[[str], Runner], flags: list[str]
) -> None:
    runner = make_runner("sigsegv")
    plain = runner.python([program("exit_sigsegv_sent.py")])
    profiled, profile = runner.spyglass([program("exit_sigsegv_sent.py")], options=flags)
    assert plain.returncode == -signal.SIGSEGV
    assert profiled.returncode == plain.returncode, profiled.stderr
    assert profiled.stdout == plain.stdout == "before\n"
    assert profile is not None  # rebuilt from the program's journal
    assert profile["processes"][0]["recovered"] is True


SIGTERM_BEFORE_A_WAIT = program("sigterm_before_a_wait.py")


def test_sigterm_just_before_a_blocking_wait_still_ends_the_program(runner: Runner) -> None:
    """A SIGTERM whose Python handler has not run when the main thread blocks in a wait the
    interpreter does not wake (a pool worker's lock) must not leave it waiting forever, as
    it once did a pool terminating its workers: plain python dies of it at once."""
    plain = runner.python([SIGTERM_BEFORE_A_WAIT])
    profiled, profile = runner.spyglass([SIGTERM_BEFORE_A_WAIT], timeout=60)
    assert plain.returncode == -signal.SIGTERM
    assert profiled.returncode == plain.returncode, profiled.stderr
    assert profiled.stdout == plain.stdout
    assert profile is not None
    assert not profile["processes"][0].get("recovered"), profile["processes"]  # its own
    work = line_figures(profile, SIGTERM_BEFORE_A_WAIT, "# sigterm:work")
    assert work["samples"] > 0, work


def test_sigterm_during_a_long_native_call_ends_the_program_without_waiting_for_it(
    runner: Runner,
) -> None:
    """A SIGTERM while the main thread holds the GIL in native code for 60 s: plain python
    dies at once; under spyglass the program dies after a grace of 2 s for its Python
    handler, the profile rebuilt from its journal, long before the call would end."""
    plain = runner.python([SIGTERM_BEFORE_A_WAIT, "spin", "60"], timeout=30)
    profiled, profile = runner.spyglass([SIGTERM_BEFORE_A_WAIT, "spin", "60"], timeout=50)
    assert plain.returncode == -signal.SIGTERM
    assert profiled.returncode == plain.returncode, profiled.stderr
    assert profile is not None
    assert profile["processes"][0]["recovered"] is True, profile["processes"]
    assert profile["elapsed_s"] < 30, profile["elapsed_s"]


SIGTERM_CHAINED = program("sigterm_chained.py")


@pytest.mark.parametrize("args", [[], ["exit"]], ids=["carries-on", "exits-as-the-default"])
def test_a_sigterm_handler_that_calls_on_the_one_it_found_shuts_down_as_under_python(
    runner: Runner, args: list[str]
) -> None:
    """spyglass takes SIGTERM with a Python handler of its own where the program left the
    default, and the program finds the default there, as under plain python. Found, it was
    called on by a handler that calls any callable one it found, and ended the process in
    the middle of its shutdown (status 143 for 0); and a handler that exits by itself when
    it finds the default did not."""
    plain = runner.python([SIGTERM_CHAINED, *args])
    profiled, profile = runner.spyglass([SIGTERM_CHAINED, *args])
    assert plain.stdout.startswith("found <Handlers.SIG_DFL: 0>\n"), plain.stdout
    assert profiled.returncode == plain.returncode == (143 if args else 0), profiled.stderr
    assert profiled.stdout == plain.stdout
    assert profile is not None
