"""Command-line rough edges: `spyglass run -` reads the program from stdin as `python -`
does; `--html report.txt app.py` says that report.txt was taken as the script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import Runner

PROGRAM = """\
total = 0
for i in range(2_000_000):  # the loop
    total += i * i
print("done", total > 0)
"""


def test_run_reads_the_program_from_stdin(runner: Runner, child_env: dict[str, str]) -> None:
    outfile = runner.workdir / "stdin.json"
    done = subprocess.run(
        [sys.executable, "-m", "spyglass", "run", "--no-report", "-o", str(outfile), "-"],
        input=PROGRAM,
        capture_output=True,
        text=True,
        env=child_env,
        cwd=runner.workdir,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done True\n"
    profile = json.loads(outfile.read_text(encoding="utf-8"))
    sources = [line["source"] for f in profile["files"].values() for line in f["lines"]]
    assert any("# the loop" in s or "total += i * i" in s for s in sources), sources


def test_html_with_a_name_that_is_not_html(runner: Runner) -> None:
    script = runner.workdir / "app.py"
    script.write_text("print('ran')\n", encoding="utf-8")
    done = runner.spyglass_cli(["run", "--html", "report.txt", str(script)])
    assert done.returncode == 2
    assert "ran" not in done.stdout
    line = done.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "'report.txt' was taken as the script" in line and "--html=report.txt" in line
    assert not Path(runner.workdir / "report.txt").exists()
