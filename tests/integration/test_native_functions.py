"""Native time by native function: each marked line of native_names_calls.py must name the
native function that took its time, with that function's share of the line's native time
against what the function measured itself (tests/ext/native_names.cpp)."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    RUN_TIMEOUT_S,
    TESTS_DIR,
    Runner,
    describe,
    line_figures,
    program,
    stdout_json,
)

PROGRAM = program("native_names_calls.py")
SOURCE = TESTS_DIR / "ext" / "native_names.cpp"
SECONDS = 0.3  # what each native_names call burns, in thread CPU seconds
MODULE = "native_names" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def _build(dest: Path) -> Path:
    cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler to build tests/ext/native_names.cpp")
    include = sysconfig.get_paths()["include"]
    cmd = [cxx, "-O2", "-shared", "-fPIC", f"-I{include}", str(SOURCE), "-o", str(dest / MODULE)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if done.returncode != 0:
        pytest.fail(f"building native_names failed:\n{done.stderr}", pytrace=False)
    return dest / MODULE


Run = tuple[dict[str, Any], dict[str, Any]]  # (profile, the program's truth)


def _run(runner: Runner, module_dir: Path, library: Path) -> Run:
    env = dict(runner.env)
    env["PYTHONPATH"] = f"{module_dir}:{env.get('PYTHONPATH', '')}"
    proc, profile = runner.spyglass([PROGRAM, str(SECONDS), str(library)], env=env)
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    return profile, stdout_json(proc)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("native_names"))


@pytest.fixture(scope="module")
def names_run(make_runner: Any, built: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    # A second copy under another name, for ctypes to load as a new object mid-run.
    library = tmp_path_factory.mktemp("cdll") / "libburn_copy.so"
    shutil.copyfile(built, library)
    return _run(make_runner("native_names"), built.parent, library)


@pytest.fixture(scope="module")
def stripped_run(make_runner: Any, built: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    strip = shutil.which("strip")
    if strip is None:
        pytest.skip("no strip to make a stripped copy of native_names")
    stripped = tmp_path_factory.mktemp("stripped") / MODULE
    shutil.copyfile(built, stripped)
    subprocess.run([strip, "--strip-all", str(stripped)], check=True, timeout=RUN_TIMEOUT_S)
    return _run(make_runner("native_names_stripped"), stripped.parent, stripped)


def _functions(line: dict[str, Any]) -> list[dict[str, Any]]:
    found = line.get("native_functions")
    assert found, f"no native functions for {line.get('source')!r} ({describe(line)})"
    return list(found)


def _share(line: dict[str, Any], matches: Any) -> float:
    """The share of the line's native time taken by the functions `matches` accepts."""
    named = sum(f["cpu_s"] for f in _functions(line) if matches(f))
    return float(named / line["cpu_native_s"])


@pytest.mark.parametrize(
    ("marker", "key", "name", "library"),
    [
        ("# names:plain_c", "c", "plain_c_burn", "native_names"),
        ("# names:cpp", "cpp", "native_names_test::Burner::burn(double)", "native_names"),
        ("# names:hidden", "hidden", "hidden_burn", "native_names"),
        ("# names:callback", "callback", "between_callbacks", "native_names"),
        ("# names:ctypes", "ctypes", "plain_c_burn", "libburn_copy.so"),
    ],
)
def test_known_function_takes_the_line(
    names_run: Run, marker: str, key: str, name: str, library: str
) -> None:
    """The function the extension burned in is the line's native time, and that time is
    what the function measured (one sampling interval of slack either side, and 10%)."""
    profile, truth = names_run
    line = line_figures(profile, PROGRAM, marker)
    top = _functions(line)[0]
    assert top["name"] == name, f"{marker}: top native function {top} ({describe(line)})"
    assert top["library"].startswith(library), top
    share = _share(line, lambda f: f["name"] == name)
    assert share >= 0.85, f"{marker}: {name} only {share:.0%} of the line's native time"
    slack = 0.1 * truth[key] + 2 * profile["interval_s"]
    assert abs(top["cpu_s"] - truth[key]) <= slack, (
        f"{marker}: {name} {top['cpu_s']:.3f}s, measured {truth[key]:.3f}s ({describe(line)})"
    )


@pytest.mark.parametrize(
    ("marker", "expected"),
    [
        # CPython's list sort: the sort itself or its comparisons and merges.
        ("# names:sorted", ("sort", "compare", "merge", "count_run", "binarysort")),
        # zlib's deflate, named or (a stripped libz) its library's offsets.
        ("# names:zlib", ("deflate", "longest_match", "libz")),
        # OpenSSL's or CPython's own SHA-256, named or by library.
        ("# names:sha256", ("sha256", "SHA256", "libcrypto", "_sha2", "_sha256", "_hashlib")),
        # The regular expression engine (sre).
        ("# names:re", ("sre_", "_sre", "SRE_")),
    ],
)
def test_standard_library_line_names_its_kernel(
    names_run: Run, marker: str, expected: tuple[str, ...]
) -> None:
    profile, _ = names_run
    line = line_figures(profile, PROGRAM, marker)
    if line["samples"] < 5:
        pytest.skip(f"too few samples to judge {marker}: {describe(line)}")

    def matches(f: dict[str, Any]) -> bool:
        return any(x in f["name"] or x in f["library"] for x in expected)

    share = _share(line, matches)
    names = [(f["name"], f["library"], round(f["cpu_s"], 3)) for f in _functions(line)[:5]]
    assert share >= 0.5, f"{marker}: expected names only {share:.0%} of native time: {names}"


def test_breakdown_covers_native_time_only(names_run: Run) -> None:
    """Every line's breakdown adds up to its native time, never more: bytecode time is not
    broken down as native functions."""
    profile, _ = names_run
    for entry in profile["files"].values():
        for line in entry["lines"]:
            named = sum(f["cpu_s"] for f in line.get("native_functions", []))
            assert named <= line["cpu_native_s"] + 1e-6, line
            if line["cpu_native_s"] > 0:
                assert named >= 0.95 * line["cpu_native_s"], line


def test_run_table_joins_functions_to_lines(names_run: Run) -> None:
    profile, _ = names_run
    table = profile["native_functions"]
    burn = [f for f in table if f["name"] == "native_names_test::Burner::burn(double)"]
    assert len(burn) == 1, [f["name"] for f in table[:10]]
    lines = burn[0]["lines"]
    cpp_line = line_figures(profile, PROGRAM, "# names:cpp")
    assert lines[0]["lineno"] == cpp_line["lineno"], lines
    ordered = [f["cpu_s"] for f in table]
    assert ordered == sorted(ordered, reverse=True)


def test_stripped_copy_is_named_by_dynsym_or_offset(stripped_run: Run) -> None:
    """A stripped module keeps its exported names (.dynsym); an unexported function is
    its library plus an offset, never another function's name."""
    profile, _ = stripped_run
    exported = _functions(line_figures(profile, PROGRAM, "# names:plain_c"))[0]
    assert exported["name"] == "plain_c_burn", exported
    hidden = _functions(line_figures(profile, PROGRAM, "# names:hidden"))[0]
    assert hidden["name"].startswith(hidden["library"] + "+0x"), hidden
    assert hidden["library"] == MODULE, hidden


def test_numpy_matmul_line_names_a_blas_kernel(make_runner: Any) -> None:
    pytest.importorskip("numpy")
    runner: Runner = make_runner("numpy_matmul")
    env = dict(runner.env)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = "1"  # the product on the calling thread, not a BLAS pool's
    program_path = program("numpy_matmul.py")
    proc, profile = runner.spyglass([program_path], options=["--cpu-only"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    line = line_figures(profile, program_path, "# names:matmul")
    if line["samples"] < 5:
        pytest.skip(f"too few samples to judge the matmul line: {describe(line)}")

    def is_kernel(f: dict[str, Any]) -> bool:
        text = (f["name"] + " " + f["library"]).lower()
        return any(x in text for x in ("gemm", "blas", "matmul", "_multiarray_umath"))

    share = _share(line, is_kernel)
    names = [(f["name"][:60], f["library"]) for f in _functions(line)[:4]]
    assert share >= 0.5, f"BLAS/NumPy kernels only {share:.0%} of the matmul line: {names}"
