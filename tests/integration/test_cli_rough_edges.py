"""Command-line rough edges: `spyglass run -` reads the program from stdin as `python -`
does; `--html report.txt app.py` says that report.txt was taken as the script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers import Runner

PROGRAM = """\
total = 0
for i in range(2_000_000):  # the loop
    total += i * i
print("done", total > 0)
"""


def _profile_of(
    runner: Runner, child_env: dict[str, str], name: str, target: list[str], stdin: str = ""
) -> dict[str, Any]:
    """`spyglass run TARGET` in the runner's directory, which must print PROGRAM's line."""
    outfile = runner.workdir / name
    done = subprocess.run(
        [sys.executable, "-m", "spyglass", "run", "--no-report", "-o", str(outfile), *target],
        input=stdin,
        capture_output=True,
        text=True,
        env=child_env,
        cwd=runner.workdir,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done True\n"
    profile: dict[str, Any] = json.loads(outfile.read_text(encoding="utf-8"))
    return profile


def test_run_reads_the_program_from_stdin(runner: Runner, child_env: dict[str, str]) -> None:
    profile = _profile_of(runner, child_env, "stdin.json", ["-"], stdin=PROGRAM)
    sources = [line["source"] for f in profile["files"].values() for line in f["lines"]]
    assert any("# the loop" in s or "total += i * i" in s for s in sources), sources


SEES = """\
import json, sys
rest = sys.stdin.read()
total = sum(i * i for i in range(300_000))
print(json.dumps({
    "argv": sys.argv,
    "file": getattr(sys.modules["__main__"], "__file__", None),
    "code": sys._getframe().f_code.co_filename,
    "stdin_left": rest,
    "text": "\xe9",
}))
"""


def test_a_program_from_stdin_sees_what_python_dash_gives_it(
    runner: Runner, child_env: dict[str, str]
) -> None:
    """It ran as `python -c` with the code: sys.argv[0] was "-c", __main__ had no
    __file__, its code and tracebacks said "<string>" where python's say "<stdin>", and
    its text, read in the locale's encoding, was written back as UTF-8."""
    source = SEES.encode("utf-8")

    def run(argv: list[str]) -> dict[str, object]:
        done = subprocess.run(
            [*argv, "-", "a", "b"],
            input=source,
            capture_output=True,
            env=child_env,
            cwd=runner.workdir,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        seen: dict[str, object] = json.loads(done.stdout)
        return seen

    outfile = runner.workdir / "stdin-sees.json"
    plain = run([sys.executable])
    profiled = run([sys.executable, "-m", "spyglass", "run", "--no-report", "-o", str(outfile)])
    expected = {
        "argv": ["-", "a", "b"],
        "file": "<stdin>",
        "code": "<stdin>",
        "stdin_left": "",
        "text": "\u00e9",
    }
    assert plain == expected
    assert profiled == plain
    profile = json.loads(outfile.read_text(encoding="utf-8"))
    assert profile["program"] == "-"
    assert "<stdin>" in profile["files"], sorted(profile["files"])
    lines = profile["files"]["<stdin>"]["lines"]
    assert lines
    for line in lines:  # the program's own text, which the profiled process never had
        assert line["source"].strip() == SEES.splitlines()[line["lineno"] - 1].strip(), line


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


def test_a_script_whose_name_starts_with_a_dash(runner: Runner, child_env: dict[str, str]) -> None:
    """`run -- -x.py` runs the script `-x.py`, as `python -- -x.py` does: it was passed to
    python as an option, which python refused."""
    (runner.workdir / "-x.py").write_text(PROGRAM, encoding="utf-8")
    profile = _profile_of(runner, child_env, "dash.json", ["--", "-x.py", "arg"])
    assert profile["argv"] == ["-x.py", "arg"]
    assert [Path(f).name for f in profile["files"]] == ["-x.py"]
