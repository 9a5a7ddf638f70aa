"""Native time by native function: each marked line of native_names_calls.py must name the
native function that took its time, with that function's share of the line's native time
against what the function measured itself (tests/ext/native_names.cpp)."""

from __future__ import annotations

import shutil
import subprocess
import sys
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
    source_lineno,
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


@pytest.fixture(scope="module")
def debuglink_run(make_runner: Any, built: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """A stripped copy whose symbols are in a separate debug file next to it, made the way
    distributions make their -dbg packages."""
    strip, objcopy = shutil.which("strip"), shutil.which("objcopy")
    if strip is None or objcopy is None:
        pytest.skip("no strip/objcopy to make a separate debug file")
    where = tmp_path_factory.mktemp("debuglink")
    stripped, debug = where / MODULE, where / (MODULE + ".debug")
    shutil.copyfile(built, stripped)
    for cmd in (
        [objcopy, "--only-keep-debug", str(stripped), str(debug)],
        [strip, "--strip-all", str(stripped)],
        [objcopy, f"--add-gnu-debuglink={debug.name}", str(stripped)],
    ):
        subprocess.run(cmd, check=True, timeout=RUN_TIMEOUT_S, cwd=where)
    return _run(make_runner("native_names_debuglink"), where, stripped)


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


def _chains(profile: dict[str, Any], path: Path, marker: str) -> list[tuple[float, list[str]]]:
    """The native entries of the stacks through the marked line: (CPU seconds, the chain
    of names from the function the samples stopped in outwards through its callers)."""
    lineno = source_lineno(path, marker)
    frames = profile["frames"]
    out = []
    for stack in profile["stacks"]:
        here = [frames[i] for i in stack["frames"]]
        if not any(f["file"] == str(path) and f["lineno"] == lineno for f in here):
            continue
        for entry in stack.get("native", []):
            callers = [c["name"] for c in reversed(entry.get("callers", []))]
            out.append((float(entry["cpu_s"]), [entry["name"], *callers]))
    return out


def _chain_share(chains: list[tuple[float, list[str]]], matches: Any) -> float:
    total = sum(s for s, _ in chains)
    return sum(s for s, chain in chains if matches(chain)) / total if total > 0 else 0.0


def _shown(chains: list[tuple[float, list[str]]]) -> list[str]:
    heaviest = sorted(chains, key=lambda c: -c[0])[:4]
    return [f"{s:.3f}s " + " <- ".join(n[:40] for n in chain[:6]) for s, chain in heaviest]


def test_extension_function_shows_its_native_caller(names_run: Run) -> None:
    """chain_inner burns, called by chain_outer, called by the module's method: the stack
    shows that chain below the Python line, up to the interpreter."""
    profile, _ = names_run
    chains = _chains(profile, PROGRAM, "# names:chain")

    def through_outer(chain: list[str]) -> bool:
        return chain[:2] == ["chain_inner", "chain_outer"] and "burn_chain" in chain[2]

    share = _chain_share(chains, through_outer)
    assert share >= 0.8, f"chain_inner under chain_outer only {share:.0%}: {_shown(chains)}"


def test_sorted_shows_the_compare_under_the_sort(names_run: Run) -> None:
    profile, _ = names_run
    chains = _chains(profile, PROGRAM, "# names:sorted")
    share = _chain_share(chains, lambda chain: any("list_sort" in n for n in chain))
    assert share >= 0.6, f"list_sort in only {share:.0%} of the chains: {_shown(chains)}"
    compares = [c for c in chains if "compare" in c[1][0]]
    assert compares, f"no comparison function among the leaves: {_shown(chains)}"
    assert all(any("list_sort" in n for n in chain[1:]) for _, chain in compares), compares


def test_library_loaded_mid_run_is_unwound(names_run: Run) -> None:
    """A library loaded by ctypes.CDLL after the tables were built gets its own: its
    function's callers are found (libffi, then _ctypes), not only its name."""
    profile, _ = names_run
    chains = _chains(profile, PROGRAM, "# names:ctypes")
    share = _chain_share(
        chains, lambda chain: chain[0] == "plain_c_burn" and "_ctypes_callproc" in chain
    )
    assert share >= 0.6, f"plain_c_burn under _ctypes_callproc {share:.0%}: {_shown(chains)}"


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


def test_stripped_copy_takes_names_from_its_separate_debug_file(debuglink_run: Run) -> None:
    """The unexported function a stripped module cannot name itself is named from the
    debug file its .gnu_debuglink points to."""
    profile, _ = debuglink_run
    hidden = _functions(line_figures(profile, PROGRAM, "# names:hidden"))[0]
    assert hidden["name"] == "hidden_burn", hidden
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
    # Under its callers: the kernel's chain reaches NumPy's matmul loop. OpenBLAS's kernels
    # for recent x86-64 machines have no unwind information: their return address is found
    # by scanning the stack, which needs to know where the innermost eval loop's C frame is,
    # and 3.9 keeps nothing of it on the C stack (docs/cpu-sampling.md).
    if sys.version_info < (3, 10):
        return
    chains = _chains(profile, Path(program_path), "# names:matmul")
    share = _chain_share(chains, lambda chain: any("matmul" in n.lower() for n in chain[1:]))
    assert share >= 0.5, f"a NumPy matmul caller in only {share:.0%}: {_shown(chains)}"


def test_spyglass_hooks_are_named_as_the_profilers_cost(runner: Runner, tmp_path: Path) -> None:
    """A program that makes and drops small objects all the time spends part of its native
    time in spyglass's allocator hooks: that time is named as the profiler's own cost, never
    as an offset in spyglass's extension."""
    churn = tmp_path / "churn.py"
    churn.write_text(
        "import time\n"
        "end = time.thread_time() + 1.5\n"
        "while time.thread_time() < end:\n"
        "    parts = [str(i) for i in range(2000)]  # churn:strings\n"
        "    del parts\n",
        encoding="utf-8",
    )
    proc, profile = runner.spyglass([churn])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    entries = list(profile.get("native_functions") or [])
    for line in (ln for f in profile["files"].values() for ln in f["lines"]):
        entries += line.get("native_functions") or []
    ours = [e for e in entries if e["library"].startswith("_native") or e["library"] == "spyglass"]
    assert all(e["name"] == "[spyglass hooks: profiler overhead]" for e in ours), ours
