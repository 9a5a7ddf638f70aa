"""Host↔device copy volume per line against a fake CUDA runtime and driver
(tests/ext/fake_cuda.c, docs/gpu.md).

The fakes export the copy entry points spyglass redirects, with CUDA's names and
signatures, and copy with memcpy between host buffers; an extension linked to both
(tests/ext/cuda_copier.c) calls them through its offset table, as one linked to libcudart
does. The test program copies known byte counts from known lines and says which: a copy of
at least the copy window must be on its line exactly, smaller ones gathered within one window.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    RUN_TIMEOUT_S,
    TESTS_DIR,
    Runner,
    c_compiler_argv,
    file_entry,
    line_figures,
    program,
    stdout_json,
)
from spyglass.profile_model.merging import merge_profiles

MIB = 1 << 20
DIRECTIONS = ("htod", "dtoh", "dtod")


def _build(what: str, source: Path, *args: str) -> None:
    cmd = [*c_compiler_argv(what), "-O1", "-shared", "-fPIC", str(source), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if done.returncode != 0:
        pytest.fail(f"building {what} failed:\n{done.stderr}", pytrace=False)


@pytest.fixture(scope="session")
def copier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The copier library, linked to a fake libcudart.so.12 and libcuda.so.1 beside it."""
    where = tmp_path_factory.mktemp("fake_cuda")
    fake = TESTS_DIR / "ext" / "fake_cuda.c"
    _build(
        "the fake CUDA runtime",
        fake,
        "-Wl,-soname,libcudart.so.12",
        "-o",
        str(where / "libcudart.so.12"),
    )
    _build(
        "the fake CUDA driver",
        fake,
        "-DFAKE_CUDA_DRIVER",
        "-Wl,-soname,libcuda.so.1",
        "-o",
        str(where / "libcuda.so.1"),
    )
    (where / "libcudart.so").symlink_to("libcudart.so.12")
    (where / "libcuda.so").symlink_to("libcuda.so.1")
    target = where / "libcuda_copier.so"
    _build(
        "the copier",
        TESTS_DIR / "ext" / "cuda_copier.c",
        f"-L{where}",
        "-lcudart",
        "-lcuda",
        f"-Wl,-rpath,{where}",
        "-o",
        str(target),
    )
    return target


def _check_lines(profile: dict[str, Any], truth: dict[str, dict[str, Any]]) -> None:
    window = profile["copy_window_mb"] * MIB
    lines = {
        line["lineno"]: line for line in file_entry(profile, program("gpu_fake_copies.py"))["lines"]
    }
    for lineno, copied in truth.items():
        line = lines.get(int(lineno), {})
        for direction in DIRECTIONS:
            measured = line.get(f"cuda_{direction}_mb", 0.0) * MIB
            want = copied[direction]
            if not copied["small"]:
                # Whole copies of a window or more: exactly theirs (MB are 2^20 bytes).
                assert measured == pytest.approx(want, abs=1), (lineno, direction, line)
            else:
                assert abs(measured - want) <= window, (lineno, direction, line)
    for direction in DIRECTIONS:
        total = sum(c[direction] for c in truth.values() if isinstance(c, dict))
        # The run's: all but what the small copies left gathered at the end.
        assert total - window <= profile[f"cuda_{direction}_mb"] * MIB <= total + 1, direction


def test_copies_of_a_library_loaded_mid_run_are_on_their_lines(runner: Runner, copier: Path):
    proc, profile = runner.spyglass([program("gpu_fake_copies.py"), copier, "run"])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None and profile["memory_profiled"] is True
    _check_lines(profile, stdout_json(proc)["truth"])
    # Merged (as spyglass merge and a run's processes are), the copies add up.
    merged = merge_profiles([profile, profile])
    path = program("gpu_fake_copies.py")
    for direction in DIRECTIONS:
        key = f"cuda_{direction}_mb"
        assert merged[key] == pytest.approx(2 * profile[key]), key
        alone = {line["lineno"]: line.get(key, 0.0) for line in file_entry(profile, path)["lines"]}
        for line in file_entry(merged, path)["lines"]:
            assert line.get(key, 0.0) == pytest.approx(2 * alone[line["lineno"]]), (key, line)


def test_copies_of_a_library_loaded_before_start(runner: Runner, copier: Path):
    proc = runner.python([program("gpu_fake_copies.py"), copier, "api"])
    assert proc.returncode == 0, proc.stderr
    out = stdout_json(proc)
    _check_lines(out["profile"], out["truth"])


def test_a_forked_child_counts_its_own_copies(runner: Runner, copier: Path):
    proc, profile = runner.spyglass([program("gpu_fake_copies.py"), copier, "fork"])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None and len(profile.get("processes", [])) == 2, profile.keys()
    line = line_figures(profile, program("gpu_fake_copies.py"), "# the child's copy")
    assert line["cuda_dtoh_mb"] == 13, line
    assert profile["cuda_dtoh_mb"] == 13 and profile["cuda_htod_mb"] == 0, profile


def test_no_gpu_leaves_cuda_alone(runner: Runner, copier: Path):
    proc, profile = runner.spyglass(
        [program("gpu_fake_copies.py"), copier, "run"], options=["--no-gpu"]
    )
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    assert not any(key.startswith("cuda_") for key in profile), sorted(profile)


def test_without_cuda_nothing_is_loaded(runner: Runner):
    proc, profile = runner.spyglass([program("gpu_no_cuda.py")])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None and profile["memory_profiled"] is True
    assert stdout_json(proc)["cuda"] == [], stdout_json(proc)
    assert not any(key.startswith("cuda_") for key in profile), sorted(profile)
