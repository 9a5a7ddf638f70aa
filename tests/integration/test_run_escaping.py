"""`spyglass run`'s report shows the program's names escaped (issue 13, item 5): a script
in a cloned repository can hold escape sequences in its file name, a source line, a
function name (code.replace(co_name=...)) or a thread name; none reaches the terminal."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import Runner

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]")
SGR = re.compile("\x1b\\[[0-9;]*m")

PROGRAM = """
import threading
TITLE = "\\x1b]0;pwned\\x07"; x = 0  # \x1b]52;c;cHduZWQ=\x07 \x1b[2J
def work():
    total = 0
    for i in range(3 * 10**6):
        total += i
    return total
work = type(work)(work.__code__.replace(co_name="w\\x1b]0;title\\x07\\u009b2J"), globals())
threading.current_thread().name = "main\\x1b[2J\\x07"
t = threading.Thread(target=work, name="t\\x1b]0;x\\x07")
t.start(); work(); t.join()
"""


def test_the_report_escapes_the_programs_names(runner: Runner, tmp_path: Path) -> None:
    script = tmp_path / "app\x1b]0;name\x07.py"
    script.write_text(PROGRAM, encoding="utf-8")
    for env in ({"NO_COLOR": "1"}, {"FORCE_COLOR": "1"}):
        proc, profile = runner.spyglass(
            [script], report=True, env={**runner.env, **env}, options=["--cpu-only"]
        )
        assert proc.returncode == 0, proc.stderr
        assert profile is not None
        shown = SGR.sub("", proc.stderr)
        assert not RAW.findall(shown), sorted(set(RAW.findall(shown)))
        assert "\\x1b" in shown
