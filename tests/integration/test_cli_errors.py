"""Mistakes get one clear line: exactly one line on stderr, starting with "spyglass", a
non-zero exit status and never a Python traceback. A bad output path is caught before the
program runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers import FIXTURES_DIR, Runner, program

MARKER_PROGRAM = program("creates_marker.py")


def assert_one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode != 0, f"exit status 0; stderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{proc.stderr}"
    assert lines[0].startswith("spyglass"), lines[0]
    return lines[0]


# ----------------------------------------------------------------------------- spyglass run


def test_missing_script(runner: Runner) -> None:
    outfile = runner.new_path("profile")
    proc, _ = runner.spyglass(["no_such_script.py"], outfile=outfile, expect_profile=False)
    line = assert_one_line_error(proc)
    assert "no_such_script.py" in line
    assert not outfile.exists()


def test_syntax_error_in_target(runner: Runner) -> None:
    broken = runner.workdir / "broken_syntax.py"
    broken.write_text("print('fine')\ndef f(:\n    pass\n", encoding="utf-8")
    proc, _ = runner.spyglass([broken], expect_profile=False)
    line = assert_one_line_error(proc)
    assert "broken_syntax.py" in line
    assert "fine" not in proc.stdout, "the broken program ran"


def test_missing_module(runner: Runner) -> None:
    proc, _ = runner.spyglass(["-m", "no_such_module_for_spyglass"], expect_profile=False)
    line = assert_one_line_error(proc)
    assert "no_such_module_for_spyglass" in line


def test_a_package_without_main_is_one_line_of_error_before_anything_runs(
    runner: Runner,
) -> None:
    """`python -m pkg` needs pkg/__main__.py: without one spyglass says so before the
    program starts (it ran the program, printed python's error and an empty report, and
    wrote an empty profile over the last one); the package's __init__ is not run to find
    out."""
    package = runner.workdir / "a_package_no_main"
    package.mkdir()
    (package / "__init__.py").write_text("print('init ran')\n", encoding="utf-8")
    plain = runner.python(["-m", package.name])
    proc, _ = runner.spyglass(["-m", package.name], expect_profile=False)
    line = assert_one_line_error(proc)
    assert "a_package_no_main.__main__" in line and "cannot be directly executed" in line
    assert proc.returncode == plain.returncode == 1
    assert "init ran" not in proc.stdout


def test_a_target_that_cannot_run_exits_as_python_does(runner: Runner) -> None:
    """The status is plain python's: 2 for a file it cannot open, 1 for the rest (a missing
    module, a directory without __main__.py, a syntax error), whatever the path says (a
    path with "module" in it once gave 2)."""
    nomain = runner.workdir / "a_module_dir"
    nomain.mkdir()
    broken = runner.workdir / "module_broken.py"
    broken.write_text("def f(:\n", encoding="utf-8")
    cases = {
        "missing file": [runner.workdir / "no_module_here.py"],
        "missing module": ["-m", "no_such_module_for_spyglass"],
        "no __main__": [nomain],
        "syntax error": [broken],
    }
    for name, target in cases.items():
        plain = runner.python(target)
        proc, _ = runner.spyglass(target, expect_profile=False)
        assert proc.returncode == plain.returncode != 0, (name, proc.returncode, plain.returncode)


def test_compiled_and_zipped_programs_run_as_under_python(runner: Runner) -> None:
    """python runs a .pyc and a zip application whatever its name (a .pex): they were
    compiled as source and refused ("source code string cannot contain null bytes")."""
    import py_compile
    import zipfile

    source = runner.workdir / "compiled_prog.py"
    source.write_text("import sys\nprint('ran', sys.argv[1:])\n", encoding="utf-8")
    pyc = Path(py_compile.compile(str(source), cfile=str(runner.workdir / "compiled_prog.pyc")))
    app = runner.workdir / "zipped_app"  # no extension
    with zipfile.ZipFile(app, "w") as z:
        z.writestr("__main__.py", "import sys\nprint('ran', sys.argv[1:])\n")
    for target in (pyc, app):
        plain = runner.python([target, "x"])
        proc, profile = runner.spyglass([target, "x"])
        assert proc.returncode == plain.returncode == 0, proc.stderr
        assert proc.stdout == plain.stdout == "ran ['x']\n"
        assert profile is not None


def test_syntax_error_in_code_string(runner: Runner) -> None:
    proc, _ = runner.spyglass(["-c", "print('fine')\ndef f(:"], expect_profile=False)
    assert_one_line_error(proc)
    assert "fine" not in proc.stdout


def test_unknown_option(runner: Runner) -> None:
    marker = runner.workdir / "ran.txt"
    proc, _ = runner.spyglass(
        [MARKER_PROGRAM, marker], options=["--no-such-option"], expect_profile=False
    )
    line = assert_one_line_error(proc)
    assert "--no-such-option" in line
    assert not marker.exists(), "the target ran despite the bad option"


def test_no_target(runner: Runner) -> None:
    proc, _ = runner.spyglass([], expect_profile=False)
    assert_one_line_error(proc)


def unwritable_outfiles(tmp: Path) -> dict[str, Path]:
    (tmp / "a_directory").mkdir(exist_ok=True)
    (tmp / "a_file").write_text("", encoding="utf-8")
    return {
        "directory does not exist": tmp / "no" / "such" / "dir" / "profile.json",
        "path is a directory": tmp / "a_directory",
        "parent is a file": tmp / "a_file" / "profile.json",
        "directory of /proc": Path("/proc/self/profile.json"),
    }


UNWRITABLE = [
    "directory does not exist",
    "path is a directory",
    "parent is a file",
    "directory of /proc",
]


@pytest.mark.parametrize("case", UNWRITABLE)
def test_unwritable_outfile_is_refused_before_the_target_runs(runner: Runner, case: str) -> None:
    outfile = unwritable_outfiles(runner.workdir)[case]
    marker = runner.workdir / "ran.txt"
    proc, _ = runner.spyglass([MARKER_PROGRAM, marker], outfile=outfile, expect_profile=False)
    assert not marker.exists(), f"{case}: the target ran although {outfile} cannot be written"
    assert_one_line_error(proc)


def test_read_only_directory_is_refused_before_the_target_runs(runner: Runner) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write into a read-only directory")
    locked = runner.workdir / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        marker = runner.workdir / "ran.txt"
        outfile = locked / "profile.json"
        proc, _ = runner.spyglass([MARKER_PROGRAM, marker], outfile=outfile, expect_profile=False)
        assert not marker.exists(), "the target ran although the profile cannot be written"
        assert_one_line_error(proc)
    finally:
        locked.chmod(0o700)


# ----------------------------------------------------------------------------- spyglass view


def view_inputs(tmp: Path) -> dict[str, Path]:
    real = {"format": "spyglass-profile", "schema_version": 1}
    truncated = tmp / "truncated.json"
    truncated.write_text(json.dumps(real)[:-7], encoding="utf-8")
    empty = tmp / "empty.json"
    empty.write_text("", encoding="utf-8")
    array = tmp / "array.json"
    array.write_text("[1, 2, 3]\n", encoding="utf-8")
    binary = tmp / "binary.json"
    binary.write_bytes(bytes(range(256)))
    incomplete = tmp / "incomplete.json"
    incomplete.write_text(json.dumps(real), encoding="utf-8")
    return {
        "not JSON": FIXTURES_DIR / "not_json.json",
        "foreign JSON (speedscope)": FIXTURES_DIR / "foreign.json",
        "future schema version": FIXTURES_DIR / "future_version.json",
        "truncated": truncated,
        "empty": empty,
        "JSON array": array,
        "binary": binary,
        "profile missing its keys": incomplete,
        "missing file": tmp / "does_not_exist.json",
        "a directory": tmp,
    }


VIEW_CASES = [
    "not JSON",
    "foreign JSON (speedscope)",
    "future schema version",
    "truncated",
    "empty",
    "JSON array",
    "binary",
    "profile missing its keys",
    "missing file",
    "a directory",
]


@pytest.mark.parametrize("case", VIEW_CASES)
def test_view_refuses_bad_input_in_one_line(runner: Runner, case: str) -> None:
    path = view_inputs(runner.workdir)[case]
    proc = runner.spyglass_cli(["view", path])
    assert_one_line_error(proc)
    assert proc.stdout == "", f"view printed a report for {case}:\n{proc.stdout}"
