"""`spyglass run --snapshot-every`: the profile (and the HTML report) rewritten while the
program runs. The program is its own witness: it reads the profile file half-way through
its run and says what it found there."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import Runner, program

READER = program("snapshot_reader.py")


def test_a_running_program_finds_its_work_in_the_snapshot(runner: Runner, tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    seen_copy = tmp_path / "seen.json"
    page = tmp_path / "p.html"
    proc, profile = runner.spyglass(
        [READER, out, seen_copy],
        options=["--snapshot-every", "0.2", "--html", str(page)],
        outfile=out,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    # 1.2 s of CPU on the line when it read the file; the snapshot is at most 0.2 s and
    # one sampling interval old, and the loop's test line takes a share of the time.
    assert seen["snapshot"] is True
    assert seen["work_cpu_s"] >= 0.3, seen
    # The final profile replaces the snapshots: whole, and no longer marked.
    assert profile is not None and "snapshot" not in profile
    assert profile["exit_status"] == 0
    assert "</html>" in page.read_text(encoding="utf-8")
    # A snapshot is a profile like any other. (Wide enough that the work line's source is
    # whole whichever columns the run needs: a wait column appears when it waited at all.)
    view = runner.spyglass_cli(["view", "--width", "200", seen_copy])
    assert view.returncode == 0, view.stderr
    assert "sum(range(200))" in view.stdout  # the work line, from the snapshot


def test_snapshots_need_a_file(runner: Runner, tmp_path: Path) -> None:
    proc = runner.spyglass_cli(["run", "--snapshot-every", "1", "-o", "-", READER, "a", "b"])
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "spyglass: error: --snapshot-every rewrites the profile file: give -o a file, not -"
    ]
    too_often = runner.spyglass_cli(["run", "--snapshot-every", "0.01", READER, "a", "b"])
    assert too_often.returncode == 2 and "at least 0.1 seconds" in too_often.stderr
