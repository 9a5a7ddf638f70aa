"""The run's directory under the temporary directory (issue 13, item 4): a killed spyglass's
is removed by a later run, a relative TMPDIR loses no child's profile, and a TMPDIR that
does not exist does not stop a program that plain python runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import Runner


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_killed_runs_directory_is_removed_by_the_next_run(runner: Runner, tmp_path: Path) -> None:
    base = tmp_path / "tmp"
    base.mkdir()
    stale = base / f"spyglass-{_dead_pid()}-0badcafe"
    stale.mkdir()
    (stale / "process-1-00.journal").write_bytes(b"x" * 100)
    (stale / "nested").mkdir()
    (stale / "nested" / "process-2-00.json").write_text("{}")
    # A link out of the directory is removed, never followed.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("kept")
    (stale / "nested" / "link").symlink_to(outside, target_is_directory=True)
    alive = base / f"spyglass-{os.getpid()}-0badcafe"  # its spyglass still runs
    alive.mkdir()
    unrelated = base / "spyglass-notes"
    unrelated.mkdir()
    env = {**runner.env, "TMPDIR": str(base)}
    proc, _ = runner.spyglass(["-c", "pass"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert not stale.exists()
    assert (outside / "keep").read_text() == "kept"
    assert alive.exists() and unrelated.exists()
    assert sorted(p.name for p in base.iterdir()) == sorted([alive.name, unrelated.name])


def test_another_users_run_directory_is_left_alone(runner: Runner, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        return  # only root can make a directory that another user owns
    base = tmp_path / "tmp"
    base.mkdir()
    theirs = base / f"spyglass-{_dead_pid()}-0badcafe"
    theirs.mkdir()
    os.chown(theirs, 12345, 12345)
    proc, _ = runner.spyglass(["-c", "pass"], env={**runner.env, "TMPDIR": str(base)})
    assert proc.returncode == 0, proc.stderr
    assert theirs.exists()


CHILD_IN_ANOTHER_DIRECTORY = """
import os, subprocess, sys
os.chdir("/")
subprocess.run([sys.executable, "-c", "sum(range(10**6))"], check=True)
"""


def test_a_relative_tmpdir_loses_no_child(runner: Runner, tmp_path: Path) -> None:
    (tmp_path / "reltmp").mkdir()
    env = {**runner.env, "TMPDIR": "reltmp"}
    proc, profile = runner.spyglass(["-c", CHILD_IN_ANOTHER_DIRECTORY], env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    assert len(profile.get("processes") or []) == 2, proc.stderr
    assert list((tmp_path / "reltmp").iterdir()) == []


def test_a_missing_tmpdir_does_not_stop_the_program(runner: Runner, tmp_path: Path) -> None:
    env = {**runner.env, "TMPDIR": str(tmp_path / "nonexistent")}
    plain = runner.python(["-c", "print('ran')"], env=env)
    proc, profile = runner.spyglass(["-c", "print('ran')"], env=env)
    assert (proc.returncode, proc.stdout) == (plain.returncode, plain.stdout) == (0, "ran\n")
    assert proc.stderr == ""
    assert profile is not None
