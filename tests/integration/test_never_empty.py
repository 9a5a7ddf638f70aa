"""A report is never empty for a common use: `-m` of an installed package or a stdlib module
profiles that package, code typed in the REPL, in IPython or given with -c is the user's,
and when the chosen scope holds nothing the report shows the whole run's hottest lines and
how to report them. multiprocessing's own helpers and a pool's shutdown are no failures."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import Runner, cpu, describe, function_figures, line_figures, program

JSON_DIR = os.path.dirname(os.path.abspath(json.__file__))


def files_under(profile: dict[str, Any], directory: str) -> float:
    """CPU seconds of the profile's files inside `directory`."""
    real = os.path.realpath(directory) + os.sep
    return sum(
        cpu(entry)
        for path, entry in profile["files"].items()
        if os.path.realpath(path).startswith(real)
    )


@pytest.fixture(scope="module")
def big_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough JSON that json.tool's work dwarfs the interpreter's start-up."""
    rng = random.Random(12)
    rows = [
        {"id": i, "name": "x" * rng.randint(1, 30), "values": [rng.random() for _ in range(12)]}
        for i in range(40_000)
    ]
    path = tmp_path_factory.mktemp("json") / "big.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


BRIEF = program("few_milliseconds.py")


def test_a_program_shorter_than_an_interval_has_its_cpu_on_its_line(runner: Runner) -> None:
    """The program's first sample is due at its first scheduler tick, not an interval
    after spyglass's own start-up, where the one due then had fallen: 6 ms of work had no
    sample in it in 5 of 19 runs, and showed no CPU at all, or all of it unattributed."""
    for attempt in range(12):
        proc, profile = runner.spyglass([BRIEF], options=["--cpu-only"])
        assert profile is not None
        assert proc.returncode == 0, proc.stderr
        truth = float(proc.stderr.split("brief cpu ")[1].split()[0])
        hot = line_figures(profile, BRIEF, "# brief:hot")
        assert 0.7 * truth <= cpu(hot) <= truth + 0.005, f"run {attempt}: {describe(hot)}, {truth}"


def test_m_of_a_stdlib_module_profiles_its_package(runner: Runner, big_json: Path) -> None:
    proc, profile = runner.spyglass(["-m", "json.tool", big_json], options=["--cpu-only"])
    assert profile is not None
    assert proc.returncode == 0, proc.stderr
    share = files_under(profile, JSON_DIR) / cpu(profile)
    # All json.tool does is json's work: only the interpreter's start-up is elsewhere.
    assert share >= 0.8, f"json's files hold {share:.1%} of the CPU: {sorted(profile['files'])}"


def test_m_of_an_installed_package_profiles_it(runner: Runner) -> None:
    spec = importlib.util.find_spec("pip")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("pip is not installed for this interpreter")
    pip_dir = next(iter(spec.submodule_search_locations))
    proc, profile = runner.spyglass(
        ["-m", "pip", "list", "--disable-pip-version-check", "--no-color"],
        options=["--cpu-only", "--interval", "0.002"],
    )
    assert profile is not None
    assert proc.returncode == 0, proc.stderr
    share = files_under(profile, pip_dir) / cpu(profile)
    assert share >= 0.8, f"pip's files hold {share:.1%} of the CPU: {sorted(profile['files'])}"


SUITE = """\
def crunch(n):
    total = 0
    for i in range(n):
        total = (total + i * i) % 1_000_003
    return total


def test_crunch():
    assert crunch(15_000_000) >= 0
"""


def test_m_pytest_profiles_the_suite_not_the_runner(runner: Runner, tmp_path: Path) -> None:
    """`-m pytest DIR` runs a test suite: its files are the user's code (named on the
    command line, here outside the working directory), pytest's own are not, so the
    suite's hot line leads the report rather than pytest's collection and rewriting."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_crunch.py").write_text(SUITE, encoding="utf-8")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    proc, profile = runner.spyglass(
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite)],
        options=["--cpu-only"],
        cwd=elsewhere,
    )
    assert profile is not None
    assert proc.returncode == 0, proc.stdout + proc.stderr
    files = sorted(profile["files"])
    assert any(f.endswith("test_crunch.py") for f in files), files
    assert not [f for f in files if "pytest" in os.path.basename(os.path.dirname(f))], files
    test_file = next(f for f in files if f.endswith("test_crunch.py"))
    crunch = function_figures(profile, "crunch", test_file)
    # pytest's start-up and collection take up to most of a second of CPU (0.84 s in one CI
    # run); crunch about as much.
    assert cpu(crunch) >= 0.25 * cpu(profile), f"{describe(crunch)} of {cpu(profile):.3f}s"


def test_an_empty_scope_shows_the_whole_run_and_how_to_narrow_it(
    runner: Runner, big_json: Path, tmp_path: Path
) -> None:
    nothing = tmp_path / "no-code-here"
    nothing.mkdir()
    proc, profile = runner.spyglass(
        ["-m", "json.tool", big_json],
        options=["--cpu-only", "--program-path", str(nothing)],
        report=True,
    )
    assert profile is not None
    assert profile["files"] == {}
    report = proc.stderr
    assert "No samples landed in profiled code." in report
    assert "Hottest lines of the whole run" in report
    rows = re.findall(r"^ +~?[\d.]+% +(\S+):\d+ ", report, re.MULTILINE)
    # The hottest are json's (start-up's imports may follow with a sample or two).
    assert len(rows) >= 3 and all(row.startswith("json/") for row in rows[:3]), report
    # The advice, whole, though stderr is no terminal (120 columns: PIPE_WIDTH).
    advice = " ".join(report.split("Hottest lines of the whole run")[1].split())
    for option in ("--profile-all", "--profile-only SUBSTR", "--program-path DIR"):
        assert option in advice, report
    assert all(len(line) <= 120 for line in report.splitlines()), report


def test_c_code_has_its_lines_and_their_source(runner: Runner) -> None:
    code = "total = 0\nfor i in range(3_000_000):\n    total = (total + i * i) % 1_000_003\n"
    _, profile = runner.spyglass(["-c", code], options=["--cpu-only"])
    assert profile is not None
    lines = {x["lineno"]: x for x in profile["files"]["<string>"]["lines"]}
    assert lines[3]["source"].strip() == "total = (total + i * i) % 1_000_003", lines
    assert cpu(lines[3]) >= 0.5 * cpu(profile)


TYPED = """\
import time, spyglass
spyglass.start(memory=False)
def crunch(n):
    total = 0
    for i in range(n):
        total = (total + i * i) % 1_000_003
    return total

t0 = time.process_time(); crunch(3_000_000); spent = time.process_time() - t0
p = spyglass.stop()
import json; print("RESULT", json.dumps({"spent": spent, "files": p["files"]}))
"""


def typed_in(command: list[str], runner: Runner) -> tuple[float, dict[str, Any]]:
    """Feeds TYPED to an interactive interpreter; what it measured and its profile's files."""
    proc = subprocess.run(
        command,
        input=TYPED,
        capture_output=True,
        text=True,
        env={**runner.env, "IPYTHONDIR": str(runner.workdir / "ipython")},
        cwd=runner.workdir,
        timeout=120,
    )
    found = re.search(r"^.*?RESULT (.*)$", proc.stdout, re.MULTILINE)
    assert found, proc.stdout + proc.stderr
    result = json.loads(found.group(1))
    return float(result["spent"]), result["files"]


def crunch_cpu(files: dict[str, Any], pattern: str) -> float:
    found = [
        f
        for path, entry in files.items()
        if re.match(pattern, path)
        for f in entry["functions"]
        if f["name"] == "crunch"
    ]
    assert found, f"crunch() is in no file named {pattern}: {sorted(files)}"
    return cpu(found[0])


def test_code_typed_in_the_repl_is_the_users(runner: Runner) -> None:
    spent, files = typed_in([sys.executable, "-i"], runner)
    assert crunch_cpu(files, r"<stdin>(-\d+)?$") >= 0.8 * spent, files  # 3.13: "<stdin>-N"


def test_code_typed_in_ipython_is_the_users(runner: Runner) -> None:
    if importlib.util.find_spec("IPython") is None:
        pytest.skip("IPython is not installed")
    command = [sys.executable, "-m", "IPython", "--no-banner", "--colors=NoColor"]
    spent, files = typed_in(command, runner)
    assert crunch_cpu(files, r"<ipython-input-") >= 0.8 * spent, files


POOL = program("pool_workers.py")


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_pythons_own_helpers_and_a_pools_shutdown_are_no_failures(
    runner: Runner, method: str
) -> None:
    proc, profile = runner.spyglass([POOL, method], report=True)
    assert profile is not None
    assert proc.returncode == 0, proc.stderr
    assert "left no usable profile" not in proc.stderr
    assert "warning" not in proc.stderr
    failed = [
        p
        for p in profile["processes"]
        if p["exit_status"] not in (0, None) and not p.get("ended") and not p.get("role")
    ]
    assert not failed, profile["processes"]
    assert not re.search(r"^ +\d+ +[\d.]+% +exit [1-9]", proc.stderr, re.MULTILINE), proc.stderr
    if method != "fork":  # the resource tracker, and the fork server
        roles = {p.get("role") for p in profile["processes"]}
        assert "multiprocessing resource tracker" in roles, profile["processes"]
        # A worker is named by the script whose tasks it runs, not by its launcher's "-c".
        workers = [
            p for p in profile["processes"] if p["pid"] != profile["pid"] and not p.get("role")
        ]
        assert workers, profile["processes"]
        named = {os.path.basename(p["program"]) for p in workers}
        assert named == {os.path.basename(POOL)}, profile["processes"]
        assert re.search(r"multiprocessing resource tracker$", proc.stderr, re.MULTILINE)
