"""The terminal report of a 600-thread server (tests/profile_shapes.py) against golden
files at 80, 120 and 200 columns, and as `spyglass view` writes it into a pipe (no
terminal, no COLUMNS: 120 columns, no escape codes).

After a deliberate change of the layout, rewrite the files with
SPYGLASS_UPDATE_GOLDEN=1 and read the difference before committing it."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from profile_shapes import LONG_HOT_LINE, server_profile
from spyglass.reporters.terminal import TerminalReporter
from spyglass.reporters.terminal_text import PIPE_WIDTH

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _golden(name: str, text: str) -> None:
    path = FIXTURES / f"server.terminal.{name}.txt"
    if os.environ.get("SPYGLASS_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("width", [80, 120, 200])
def test_server_report_at_width(width: int) -> None:
    out = io.StringIO()
    TerminalReporter(color=False, width=width).write(server_profile(), out)
    text = out.getvalue()
    assert all(len(line) <= width for line in text.splitlines())
    _golden(str(width), text)
    # The request threads are one row; the source of the hottest line is whole when wide.
    assert text.count("(process_request_thread)") == 1
    assert (LONG_HOT_LINE.strip() in text) == (width >= 200)


def test_server_report_into_a_pipe(tmp_path: Path) -> None:
    profile = tmp_path / "server.json"
    profile.write_text(json.dumps(server_profile()), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    done = subprocess.run(
        [sys.executable, "-m", "spyglass", "view", str(profile)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) > 80
    assert all(len(line) <= PIPE_WIDTH for line in done.stdout.splitlines())
    _golden("pipe", done.stdout)


def test_each_thread_on_its_own_row() -> None:
    out = io.StringIO()
    TerminalReporter(group_threads=False, color=False, width=120).write(server_profile(), out)
    text = out.getvalue()
    assert "Threads (609)" in text
    assert "597 more threads" in text  # 12 rows shown, the rest summed


def test_legends_are_wrapped_never_cut() -> None:
    fixture = FIXTURES / "mem_simple.json"
    out = io.StringIO()
    profile = json.loads(fixture.read_text(encoding="utf-8"))
    TerminalReporter(color=False, width=40).write(profile, out)
    text = out.getvalue()
    assert all(len(line) <= 40 for line in text.splitlines())
    # A note wider than the report goes on over two lines, whole.
    assert "a wider report also shows memory, peak, timeline, copy" in " ".join(text.split())
