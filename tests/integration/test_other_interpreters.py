"""A child process run by another Python version than the profiler's: profiled by that
interpreter's own spyglass when it has the same one, else left to run normally and listed
in the profile as not profiled, with the reason."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import Runner, cpu, describe, function_figures, line_figures, program

# Builds and starts other interpreters: seconds each.
pytestmark = pytest.mark.slow

OTHER = program("runs_other_python.py")
CHILD = program("other_python_child.py")
REPO = Path(__file__).resolve().parents[2]


def _interpreters() -> list[str]:
    """Interpreters of other CPython versions on this machine (pyenv's, then PATH's)."""
    found: dict[str, str] = {}
    roots = [os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")]
    for minor in range(8, 15):
        version = f"3.{minor}"
        if version == "{}.{}".format(*sys.version_info[:2]):
            continue
        candidates = sorted(Path(roots[0], "versions").glob(f"{version}.*/bin/python{version}"))
        which = shutil.which(f"python{version}")
        for path in [*map(str, candidates), *([which] if which else [])]:
            if _spyglass_version(path) is not False:
                found.setdefault(version, path)
    return list(found.values())


def _spyglass_version(python: str) -> str | bool | None:
    """The version of spyglass `python` imports, None without one, False if it won't run."""
    try:
        done = subprocess.run(
            [python, "-c", "import spyglass; print(spyglass.__version__)"],
            capture_output=True,
            text=True,
            timeout=60,
            env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    if done.returncode != 0:
        return None if "ModuleNotFoundError" in done.stderr else False
    return done.stdout.strip()


def _same_spyglass(python: str) -> bool:
    """Whether `python` has this very spyglass: the same Python files (a venv left by an
    older build has the same version number but other code)."""
    import spyglass

    done = subprocess.run(
        [python, "-c", "import spyglass; print(spyglass.__file__)"],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
    )
    if done.returncode != 0:
        return False
    ours, theirs = Path(spyglass.__file__).parent, Path(done.stdout.strip()).parent
    files = sorted(p.relative_to(ours) for p in ours.rglob("*.py"))
    return all(
        (theirs / f).is_file() and (theirs / f).read_bytes() == (ours / f).read_bytes()
        for f in files
    )


def _with_spyglass() -> str | None:
    """Another version's interpreter with our spyglass installed: the other CI runs' venvs
    or the developer's."""
    venvs = [*REPO.glob("build/test-3.*/venv/bin/python"), *REPO.glob(".venv3.*/bin/python")]
    for python in sorted(map(str, venvs)):
        version = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        if version and version != "{}.{}".format(*sys.version_info[:2]):
            if _same_spyglass(python):
                return python
    return None


def _bare_interpreter() -> str:
    """Another CPython version without spyglass (the test is skipped without one)."""
    bare = [p for p in _interpreters() if _spyglass_version(p) is None]
    if not bare:
        pytest.skip("no other CPython version without spyglass on this machine")
    return bare[0]


def test_another_version_without_spyglass_runs_normally_and_is_listed(runner: Runner) -> None:
    bare = _bare_interpreter()
    proc, profile = runner.spyglass([OTHER, bare, CHILD])
    plain = runner.python([OTHER, bare, CHILD])
    assert profile is not None
    assert proc.returncode == plain.returncode == 0, proc.stderr
    assert proc.stdout == plain.stdout and "child status 0" in proc.stdout
    listed = [p for p in profile["processes"] if p.get("not_profiled")]
    assert len(listed) == 1, profile["processes"]
    assert "spyglass is not installed for Python 3." in listed[0]["not_profiled"]
    assert str(CHILD) in listed[0]["argv"]
    assert listed[0]["cpu_python_s"] == 0
    report, _ = runner.spyglass([OTHER, bare, CHILD], report=True)
    assert "unprofiled" in report.stderr and "not installed" in report.stderr


def test_another_version_with_spyglass_profiles_itself_into_the_run(runner: Runner) -> None:
    other = _with_spyglass()
    if other is None:
        pytest.skip("no other CPython version with this spyglass installed")
    proc, profile = runner.spyglass([OTHER, other, CHILD])
    assert profile is not None
    assert proc.returncode == 0, proc.stderr
    assert "child status 0" in proc.stdout
    processes = profile["processes"]
    assert len(processes) == 2 and not any(p.get("not_profiled") for p in processes)
    child = next(p for p in processes if p["pid"] != profile["pid"])
    crunch = function_figures(profile, "crunch", CHILD)
    assert cpu(child) >= 0.2, child
    assert cpu(crunch) >= 0.8 * cpu(child), describe(crunch)


PY2_CHILD = program("python2_child.py2")  # Python 2 syntax: not for ruff


def test_a_python2_child_runs_as_without_spyglass(runner: Runner) -> None:
    """Every Python imports the bootstrap, Python 2 included: it must stay quiet there."""
    roots = [os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")]
    found = sorted(Path(roots[0], "versions").glob("2.7.*/bin/python2.7"))
    python2 = str(found[-1]) if found else shutil.which("python2")
    if python2 is None:
        pytest.skip("no Python 2 on this machine")
    proc, profile = runner.spyglass([OTHER, python2, PY2_CHILD])
    plain = runner.python([OTHER, python2, PY2_CHILD])
    assert profile is not None
    assert proc.stdout == plain.stdout == "python 2 says hello\nchild status 0\n", proc.stderr
    # Nothing of spyglass's (a message of its own, a traceback through its bootstrap); the
    # paths of the run, which may well hold "spyglass", are no part of that.
    assert not re.search(r"^spyglass|Traceback", proc.stderr, re.MULTILINE), proc.stderr
    listed = [p for p in profile["processes"] if p.get("not_profiled")]
    assert [p["python_version"][:2] for p in listed] == ["2."], profile["processes"]


EXECS_OTHER = program("execs_other_python.py")


def test_the_program_execing_another_version_keeps_both(runner: Runner) -> None:
    """The program replaces itself with another Python version: the part before the exec
    is profiled, the new image runs as without spyglass and is listed."""
    bare = _bare_interpreter()
    proc, profile = runner.spyglass([EXECS_OTHER, bare, CHILD])
    plain = runner.python([EXECS_OTHER, bare, CHILD])
    assert profile is not None
    assert proc.returncode == plain.returncode == 0, proc.stderr
    assert proc.stdout == plain.stdout and proc.stdout.startswith("child ("), proc.stdout
    before = line_figures(profile, EXECS_OTHER, "# execother:before")
    assert before["samples"] >= 5, describe(before)
    listed = [p for p in profile["processes"] if p.get("not_profiled")]
    assert [p["pid"] for p in listed] == [profile["pid"]], profile["processes"]
