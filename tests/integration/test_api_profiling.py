"""Profiling from inside a program: spyglass.start()/stop(), `with spyglass.profile(...)`, and
`@spyglass.profile` narrowing a `spyglass run` report to the decorated function."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import pytest

from helpers import (
    Runner,
    assert_valid_profile,
    cpu,
    describe,
    figures_at,
    file_entry,
    function_figures,
    line_figures,
    load_profile,
    program,
    stdout_json,
)

THIS_FILE = Path(__file__).resolve()


def busy_in_this_file(n: int) -> int:
    total = 0
    for i in range(n):
        total = (total * 31 + i) % 1_000_003
    return total


def test_start_stop_in_process_returns_the_profile() -> None:
    """In this very process (pytest's): start(), work, stop() returns the profile as a dict."""
    import spyglass

    spyglass.start()
    try:
        busy_in_this_file(3_000_000)
    finally:
        profile = spyglass.stop()
    assert isinstance(profile, dict)
    assert json.loads(json.dumps(profile)) == dict(profile)
    assert_valid_profile(profile, "the profile spyglass.stop() returned")
    assert profile["exit_status"] is None
    source, first = inspect.getsourcelines(busy_in_this_file)
    hot_lineno = first + next(i for i, text in enumerate(source) if "% 1_000_003" in text)
    hot = figures_at(profile, THIS_FILE, hot_lineno)
    assert hot["samples"] >= 5, describe(hot)
    assert hot["cpu_python_s"] >= 0.9 * cpu(hot), describe(hot)
    busy = function_figures(profile, "busy_in_this_file", THIS_FILE)
    assert cpu(busy) >= 0.5 * cpu(profile), f"{describe(busy)} of {cpu(profile):.3f}s"


def test_stop_without_start_and_double_start_are_refused() -> None:
    import spyglass

    with pytest.raises(spyglass.ProfilerStateError):
        spyglass.stop()
    spyglass.start()
    try:
        with pytest.raises(spyglass.ProfilerStateError):
            spyglass.start()
    finally:
        spyglass.stop()


def test_with_block_writes_a_valid_profile_of_the_block(runner: Runner) -> None:
    """api_with_block.py runs under plain python and profiles only its `with` block."""
    path = program("api_with_block.py")
    outfile = runner.new_path("block")
    proc = runner.python([path, outfile])
    assert proc.returncode == 0, proc.stderr
    assert outfile.exists(), "with spyglass.profile(outfile=...) wrote nothing"
    profile = load_profile(outfile)
    printed = stdout_json(proc)
    assert printed["result_is_dict"] is True
    assert printed["samples"] == profile["samples"], "p.result is not what was written"
    inside = line_figures(profile, path, "# api:block-hot")
    assert inside["samples"] >= 5, describe(inside)
    outside = line_figures(profile, path, "# api:outside-hot")
    assert outside["samples"] == 0 and cpu(outside) == 0, f"outside the block: {describe(outside)}"


def function_span(path: Path, name: str) -> range:
    """The lines of function `name` in `path`, decorators included."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            return range(first, (node.end_lineno or node.lineno) + 1)
    raise AssertionError(f"no function {name} in {path}")


def test_decorator_narrows_the_run_report_to_the_decorated_function(runner: Runner) -> None:
    path = program("api_decorated.py")
    proc, profile = runner.spyglass([path])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    chosen = function_span(path, "chosen")
    entry = file_entry(profile, path)
    outside = [line["lineno"] for line in entry["lines"] if line["lineno"] not in chosen]
    assert not outside, f"lines outside the decorated function are reported: {outside}"
    hot = line_figures(profile, path, "# decorated:hot")
    assert hot["samples"] >= 5, describe(hot)
    assert function_figures(profile, "not_chosen", path, required=False)["samples"] == 0
    assert [f["name"] for f in entry["functions"]] == ["chosen"]
    assert [list(f) for f in profile["options"]["functions"]] == [[str(path), chosen.start]]
    assert list(profile["files"]) == [str(path)], "other files are reported"


def test_start_under_spyglass_run_is_refused_as_a_second_start_is(
    runner: Runner, tmp_path: Path
) -> None:
    """One error for one situation: the process is profiled already, whoever started it."""
    script = tmp_path / "starts.py"
    script.write_text(
        "import spyglass\n"
        "for attempt in (spyglass.start, lambda: spyglass.profile().__enter__()):\n"
        "    try:\n"
        "        attempt()\n"
        "    except spyglass.ProfilerStateError as e:\n"
        "        print('refused:', e)\n",
        encoding="utf-8",
    )
    proc, profile = runner.spyglass([str(script)])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    assert proc.stdout.count("refused: spyglass is already profiling this process") == 2, (
        proc.stdout + proc.stderr
    )


REPL_SESSION = """\
import spyglass
spyglass.start()
def spin(n):
    total = 0
    for i in range(n): total = (total * 31 + i) % 1_000_003
    return total

spin(2_000_000)
kept = [bytearray(1000) for _ in range(40_000)]
_ = spyglass.stop({outfile!r})
"""


def test_an_interactive_session_is_named_and_its_last_structure_is_no_leak(
    tmp_path: Path,
) -> None:
    """The API typed into Python's interactive prompt (here fed through a pipe to `python
    -i`): the report names the program as interactive, not as an empty string, and the
    list built in one go by the last statement before stop() is not called a leak."""
    import subprocess
    import sys

    outfile = tmp_path / "repl.json"
    done = subprocess.run(
        [sys.executable, "-i"],
        input=REPL_SESSION.format(outfile=str(outfile)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    profile = load_profile(outfile)
    assert profile["program"] == "<interactive>"
    leaks = [leak for entry in profile["files"].values() for leak in entry.get("leaks") or []]
    assert leaks == [], leaks
    # The prompt names each statement's code "<stdin>" before 3.13, "<stdin>-N" from 3.13 on:
    # the statement that built the list is line 1 of the one holding most memory at the end.
    typed = [name for name in profile["files"] if name.startswith("<stdin>")]
    assert typed, list(profile["files"])
    kept = max(
        (figures_at(profile, name, 1) for name in typed),
        key=lambda line: float(line.get("mem_live_end_mb") or 0),
    )
    assert kept.get("mem_live_end_mb", 0) >= 0.5 * 40_000 * 1000 / 2**20, describe(kept)


REPL_LOOP_THEN_WORK = """\
import spyglass
spyglass.start()
kept = []
for i in range(4000):
    x = [j for j in range(200)]
    kept.append(bytes(5000))

junk = None
for k in range(300):
    junk = [str(i) for i in range(20000)]

_ = spyglass.stop({outfile!r})
"""


def test_a_structure_built_by_one_statement_at_the_prompt_is_no_leak(tmp_path: Path) -> None:
    """A loop typed at the prompt builds a list (20 MB, its lines alternating: many
    executions), then other statements churn: that statement's code is not a unit of work
    that ended, as a test function's is, and the list was called a leak in 3 of 3 runs."""
    import subprocess
    import sys

    outfile = tmp_path / "repl.json"
    done = subprocess.run(
        [sys.executable, "-i"],
        input=REPL_LOOP_THEN_WORK.format(outfile=str(outfile)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    profile = load_profile(outfile)
    leaks = [leak for entry in profile["files"].values() for leak in entry.get("leaks") or []]
    assert leaks == [], leaks
    kept = sum(
        float(line.get("mem_live_end_mb") or 0)
        for name, entry in profile["files"].items()
        if name.startswith("<stdin>")
        for line in entry["lines"]
    )
    assert kept >= 0.5 * 4000 * 5000 / 2**20, kept


REPL_ECHO = """
import spyglass
spyglass.start()
total = sum(i * i for i in range(2_000_000))
spyglass.stop()
_.report()
"""


def test_a_profile_typed_at_the_prompt_shows_in_one_line_and_reports_itself() -> None:
    """At the prompt, the value of `spyglass.stop()` is echoed: a one-line summary, not the
    whole JSON document; its report() prints the terminal report, as spyglass view does."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-i"], input=REPL_ECHO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    echoed = [line for line in done.stdout.splitlines() if "spyglass profile of" in line]
    assert len(echoed) == 1, done.stdout[-2000:]
    assert echoed[0].startswith("<spyglass profile of <interactive>: "), echoed[0]
    assert "samples" in echoed[0] and "allocated" in echoed[0], echoed[0]
    assert len(done.stdout) < 1000, done.stdout[-2000:]  # not the document
    assert "spyglass · <interactive>" in done.stderr, done.stderr[-2000:]
