"""`spyglass run` in the environments programs run in: a virtual environment, PYTHONPATH, the
program's own LD_PRELOAD, `-m pytest` (and pytest-xdist's worker processes). The program
sees what it sees under plain python, and its work is in the profile."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import site
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    RUN_TIMEOUT_S,
    Profile,
    cpu,
    describe,
    figures_at,
    function_figures,
    line_figures,
    load_profile,
    program,
    stdout_json,
    total_cpu,
)

ENV_REPORT = program("unusual_env_report.py")

WORK_MODULE = """\
def work():
    n = 0
    for i in range(1_500_000):
        n = (n + i * 7) % 1_000_003
    return n
"""


def run(cmd: list[Any], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmd = [str(c) for c in cmd]
    try:
        return subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=RUN_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"timed out after {RUN_TIMEOUT_S} s: {shlex.join(cmd)}", pytrace=False)
        raise AssertionError from e  # unreachable


def both_ways(
    python: Path | str, target: list[Any], *, cwd: Path, env: dict[str, str], outfile: Path
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str], Profile]:
    """`python TARGET` and `python -m spyglass run --no-report -o OUTFILE TARGET`."""
    plain = run([python, *target], cwd=cwd, env=env)
    spyglass = [python, "-m", "spyglass", "run", "--no-report", "-o", outfile]
    profiled = run([*spyglass, *target], cwd=cwd, env=env)
    if not outfile.exists():
        pytest.fail(
            f"spyglass wrote no profile (exit status {profiled.returncode})\nstderr:\n"
            f"{profiled.stderr}",
            pytrace=False,
        )
    return plain, profiled, load_profile(outfile)


def assert_both_succeeded(
    plain: subprocess.CompletedProcess[str], profiled: subprocess.CompletedProcess[str]
) -> None:
    assert plain.returncode == 0, f"plain python failed:\n{plain.stdout}{plain.stderr}"
    assert profiled.returncode == 0, (
        f"exit status {profiled.returncode} under spyglass\n{profiled.stdout}{profiled.stderr}"
    )


def without_pythonpath(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k != "pythonpath"}


def assert_pythonpath_kept(seen: dict[str, Any], plain: dict[str, Any]) -> None:
    """spyglass puts its bootstrap directory first on PYTHONPATH, so that every Python child
    profiles itself (src/spyglass/runtime/children.py); the program's own entries must
    follow, unchanged and in order. (The program's sys.path, and its children's, are
    compared exactly elsewhere: the bootstrap takes itself off sys.path.)"""
    if plain["pythonpath"] is None:
        return
    expected = plain["pythonpath"].split(os.pathsep)
    got = (seen["pythonpath"] or "").split(os.pathsep)
    assert got[-len(expected) :] == expected, (seen["pythonpath"], plain["pythonpath"])


def assert_call_line_has_the_work(profile: Profile) -> None:
    """The module's work() is not the program's code (a library, or outside the program
    path): its time is on the line of the program that called it."""
    call = line_figures(profile, ENV_REPORT, "# env:call")
    assert call["samples"] >= 5, describe(call)
    assert cpu(call) >= 0.4 * total_cpu(profile), f"{describe(call)}; total {describe(profile)}"


@pytest.fixture
def work_module_dir(tmp_path: Path) -> Path:
    where = tmp_path / "modules"
    where.mkdir()
    (where / "unusual_env_mod.py").write_text(WORK_MODULE, encoding="utf-8")
    return where


# --------------------------------------------------------------------------- virtual environment


def test_inside_a_virtual_environment(tmp_path: Path, child_env: dict[str, str]) -> None:
    """A venv made with --system-site-packages, running a module installed in the venv only.

    When the tests themselves run in a virtual environment (as they usually do), the new
    venv's "system" site-packages are the base interpreter's, where spyglass is not installed:
    a .pth file then adds this interpreter's site-packages to it, as a system-wide install of
    spyglass would be seen."""
    venv = tmp_path / "venv with spaces"
    made = run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv],
        cwd=tmp_path,
        env=child_env,
    )
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    where = run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        cwd=tmp_path,
        env=child_env,
    )
    venv_site = Path(where.stdout.strip())
    if sys.prefix != sys.base_prefix:
        ours = [p for p in site.getsitepackages() if os.path.isdir(p)]
        lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in ours)
        (venv_site / "_unusual_outer_env.pth").write_text(lines, encoding="utf-8")
    (venv_site / "unusual_venv_mod.py").write_text(WORK_MODULE, encoding="utf-8")
    found = run([python, "-c", "import spyglass, unusual_venv_mod"], cwd=tmp_path, env=child_env)
    assert found.returncode == 0, f"spyglass is not importable in the venv:\n{found.stderr}"

    outfile = tmp_path / "profile.json"
    target = [ENV_REPORT, "unusual_venv_mod"]
    plain, profiled, profile = both_ways(
        python, target, cwd=tmp_path, env=child_env, outfile=outfile
    )
    assert_both_succeeded(plain, profiled)
    seen_plain, seen = stdout_json(plain), stdout_json(profiled)
    assert seen_plain["prefix"] == str(venv)
    assert seen_plain["module"] == str(venv_site / "unusual_venv_mod.py")
    assert without_pythonpath(seen) == without_pythonpath(seen_plain)
    assert_pythonpath_kept(seen, seen_plain)
    assert str(venv_site / "unusual_venv_mod.py") not in profile["files"], "a venv library"
    assert_call_line_has_the_work(profile)
    assert len(profile.get("processes", [])) == 2, "the program's Python child is not profiled"


# --------------------------------------------------------------------------- PYTHONPATH


def test_pythonpath_module(
    tmp_path: Path, child_env: dict[str, str], work_module_dir: Path
) -> None:
    env = dict(child_env)
    env["PYTHONPATH"] = os.pathsep.join([str(work_module_dir), child_env["PYTHONPATH"]])
    plain, profiled, profile = both_ways(
        sys.executable,
        [ENV_REPORT, "unusual_env_mod"],
        cwd=tmp_path,
        env=env,
        outfile=tmp_path / "profile.json",
    )
    assert_both_succeeded(plain, profiled)
    seen_plain, seen = stdout_json(plain), stdout_json(profiled)
    assert seen_plain["module"] == str(work_module_dir / "unusual_env_mod.py")
    assert str(work_module_dir) in seen_plain["path"]
    assert without_pythonpath(seen) == without_pythonpath(seen_plain), (
        "the program (or its Python child) sees another sys.path under spyglass"
    )
    assert_pythonpath_kept(seen, seen_plain)
    assert_call_line_has_the_work(profile)


def test_an_empty_pythonpath_entry_is_still_the_current_directory(
    tmp_path: Path, child_env: dict[str, str], runner: Any
) -> None:
    """`export PYTHONPATH=$PYTHONPATH:/x` leaves an empty entry, which Python reads as the
    current directory: dropped, the program's modules there no longer imported."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "helper_in_cwd.py").write_text("WHERE = __file__\n", encoding="utf-8")
    script = tmp_path / "prog.py"
    script.write_text("import helper_in_cwd\nprint(helper_in_cwd.WHERE)\n", encoding="utf-8")
    env = dict(child_env)
    env["PYTHONPATH"] = child_env["PYTHONPATH"] + os.pathsep
    plain, profiled, _ = both_ways(
        sys.executable, [script], cwd=work, env=env, outfile=tmp_path / "p.json"
    )
    assert_both_succeeded(plain, profiled)
    assert profiled.stdout == plain.stdout == f"{work / 'helper_in_cwd.py'}\n"
    launched, profile = runner.spyglass([script], cwd=work, env=env)
    assert launched.returncode == 0 and profile is not None, launched.stderr
    assert launched.stdout == plain.stdout


def test_a_profile_function_set_by_the_programs_sitecustomize_is_kept(
    tmp_path: Path, child_env: dict[str, str], runner: Any
) -> None:
    """The launched program's bootstrap watches for its first line with a profile function
    of its own: one the program's sitecustomize had set was replaced, then cleared."""
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "sitecustomize.py").write_text(
        "import sys\n"
        "def watcher(frame, event, arg):\n"
        "    watcher.events += 1\n"
        "watcher.events = 0\n"
        "sys.setprofile(watcher)\n",
        encoding="utf-8",
    )
    script = tmp_path / "prog.py"
    script.write_text(
        "import sys\nw = sys.getprofile()\nprint(getattr(w, '__name__', w), w.events > 0)\n",
        encoding="utf-8",
    )
    env = dict(child_env)
    env["PYTHONPATH"] = os.pathsep.join([str(site_dir), child_env["PYTHONPATH"]])
    plain = run([sys.executable, script], cwd=tmp_path, env=env)
    assert plain.stdout == "watcher True\n", plain.stderr
    profiled, profile = runner.spyglass([script], cwd=tmp_path, env=env)
    assert profiled.returncode == 0 and profile is not None, profiled.stderr
    assert profiled.stdout == plain.stdout


# --------------------------------------------------------------------------- LD_PRELOAD


def libm_file() -> str | None:
    """The file of the C math library this interpreter has loaded, or None."""
    import ctypes.util

    name = ctypes.util.find_library("m")
    if not name:
        return None
    ctypes.CDLL(name)  # loaded, so that it shows in our own map
    with open("/proc/self/maps", encoding="utf-8") as maps:
        for line in maps:
            path = line.split(maxsplit=5)[-1].strip()
            if os.path.basename(path) == name and os.path.isfile(path):
                return os.path.realpath(path)
    return None


def test_programs_own_ld_preload_is_left_alone(
    tmp_path: Path, child_env: dict[str, str], work_module_dir: Path
) -> None:
    preload = libm_file()
    if preload is None:
        pytest.skip("no libm file found to preload")
    env = dict(child_env)
    env["LD_PRELOAD"] = preload
    env["PYTHONPATH"] = os.pathsep.join([str(work_module_dir), child_env["PYTHONPATH"]])
    plain, profiled, profile = both_ways(
        sys.executable,
        [ENV_REPORT, "unusual_env_mod"],
        cwd=tmp_path,
        env=env,
        outfile=tmp_path / "profile.json",
    )
    assert_both_succeeded(plain, profiled)
    seen_plain, seen = stdout_json(plain), stdout_json(profiled)
    assert seen_plain["ld_preload"] == seen_plain["child_ld_preload"] == preload
    assert seen["ld_preload"] == preload, "the program's LD_PRELOAD changed under spyglass"
    assert seen["child_ld_preload"] == preload, "its child's LD_PRELOAD changed under spyglass"
    assert without_pythonpath(seen) == without_pythonpath(seen_plain)
    assert "ld.so" not in profiled.stderr, profiled.stderr  # no loader complaint
    assert_call_line_has_the_work(profile)


# --------------------------------------------------------------------------- pytest

SMALL_TESTS = """\
def crunch(k):
    n = 0
    for i in range(3_000_000):  # enough to outweigh pytest's and xdist's own start-up
        n = (n + i * k) % 1_000_003  # small:hot
    return n


def test_one():
    assert crunch(1) >= 0


def test_two():
    assert crunch(2) >= 0


def test_three():
    assert crunch(3) >= 0


def test_four():
    assert crunch(4) >= 0
"""

SMALL_TEST_NAMES = ["test_one", "test_two", "test_three", "test_four"]
DURATION = re.compile(r" in [0-9.]+s")


def pytest_project(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "project"
    project.mkdir()
    tests = project / "test_unusual_small.py"
    tests.write_text(SMALL_TESTS, encoding="utf-8")
    return project, tests


def summary(proc: subprocess.CompletedProcess[str]) -> str:
    """pytest's last line without its duration."""
    lines = proc.stdout.strip().splitlines()
    return DURATION.sub("", lines[-1]) if lines else ""


def assert_tests_profiled(profile: Profile, tests: Path) -> None:
    for name in SMALL_TEST_NAMES:
        # crunch() runs for each test: its line is the hot one, each test's call line has
        # no CPU of its own, so look at the stacks: every test function must be in one.
        assert any(
            profile["frames"][i]["function"] == name and profile["frames"][i]["file"] == str(tests)
            for stack in profile["stacks"]
            for i in stack["frames"]
        ), f"{name} is in no stack of the profile"
    hot = line_figures(profile, tests, "# small:hot")
    loop = figures_at(profile, tests, hot["lineno"] - 1)  # the `for` line above it
    crunch = function_figures(profile, "crunch", tests)
    assert hot["samples"] >= 5, describe(hot)
    assert cpu(hot) + cpu(loop) >= 0.8 * cpu(crunch), describe(crunch)
    # crunch() is about a fifth of the run's CPU on a quiet machine; pytest's and xdist's
    # start-up grow on a loaded one. A tenth still tells a hot function from a lost one.
    assert cpu(crunch) >= 0.1 * total_cpu(profile), f"{describe(crunch)}; {describe(profile)}"


@pytest.mark.slow
def test_dash_m_pytest(tmp_path: Path, child_env: dict[str, str]) -> None:
    project, tests = pytest_project(tmp_path)
    target = ["-m", "pytest", "-q", "-p", "no:cacheprovider", tests.name]
    plain, profiled, profile = both_ways(
        sys.executable, target, cwd=project, env=child_env, outfile=tmp_path / "profile.json"
    )
    assert_both_succeeded(plain, profiled)
    assert summary(plain) == "4 passed"
    assert summary(profiled) == summary(plain), profiled.stdout
    assert profile["exit_status"] == 0
    assert_tests_profiled(profile, tests)


@pytest.mark.slow
def test_dash_m_pytest_with_xdist_workers(tmp_path: Path, child_env: dict[str, str]) -> None:
    if importlib.util.find_spec("xdist") is None:
        pytest.skip(f"pytest-xdist is not installed for {sys.executable}")
    project, tests = pytest_project(tmp_path)
    target = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", tests.name]
    plain, profiled, profile = both_ways(
        sys.executable, target, cwd=project, env=child_env, outfile=tmp_path / "profile.json"
    )
    assert_both_succeeded(plain, profiled)
    assert summary(plain) == "4 passed"
    assert summary(profiled) == summary(plain), profiled.stdout
    processes = profile.get("processes", [])
    workers = [p for p in processes if p["pid"] != profile["pid"]]
    print(f"\nxdist: {len(processes)} processes: " + "; ".join(describe(p) for p in processes))
    assert len(processes) >= 3, f"the two workers are not in the profile: {processes}"
    assert_tests_profiled(profile, tests)
    crunch = function_figures(profile, "crunch", tests)
    assert sum(cpu(p) for p in workers) >= cpu(crunch), "the tests ran in the workers"
    assert sum(1 for p in workers if p["samples"] >= 10) >= 2, processes
    # Labelled by their role, not by the launcher's `-c`.
    roles = sorted(str(p.get("role")) for p in workers if str(p.get("role", "")).startswith("x"))
    assert roles == ["xdist worker gw0", "xdist worker gw1"], processes
