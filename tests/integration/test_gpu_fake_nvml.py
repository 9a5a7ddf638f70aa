"""The GPU engine against a scripted fake NVML (tests/ext/fake_nvml.c, docs/gpu.md).

The fake exports NVML's entry points; the test programs tell it, through ctypes, what they
do on the GPU as they enter and leave their GPU-bound function, and spyglass loads it in
place of libnvidia-ml.so.1 (SPYGLASS_NVML_LIBRARY). That exercises on any machine what a
real GPU would: loading, per-process against device-wide figures, attribution to lines,
several devices, the driver failing mid-run, fork, --no-gpu and no NVML at all. Margins are
wide: readings are taken every interval on a loaded machine, so a function's figures mix
in a reading or two of its neighbours'.
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
    function_figures,
    program,
    stdout_json,
)

FAKE_SOURCE = TESTS_DIR / "ext" / "fake_nvml.c"
MIB = 1 << 20
MB_SET = 2000  # what the GPU-bound function holds, in the profile's MB (2^20 bytes)


@pytest.fixture(scope="session")
def fake_nvml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("fake_nvml") / "libfake_nvml.so"
    cmd = [*c_compiler_argv(str(FAKE_SOURCE)), "-O1", "-shared", "-fPIC", str(FAKE_SOURCE)]
    cmd += ["-o", str(target), "-lpthread"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if done.returncode != 0:
        pytest.fail(f"building the fake NVML failed:\n{done.stderr}", pytrace=False)
    return target


def _env(runner: Runner, fake: Path | str, config: str = "") -> dict[str, str]:
    return {**runner.env, "SPYGLASS_NVML_LIBRARY": str(fake), "FAKE_NVML_CONFIG": config}


def _run(runner: Runner, fake: Path, config: str, *args: str, report: bool = False) -> Any:
    proc, profile = runner.spyglass(
        [program("gpu_fake_lines.py"), *args], env=_env(runner, fake, config), report=report
    )
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    return proc, profile


def _fn(profile: Any, name: str) -> dict[str, Any]:
    return function_figures(profile, name, program("gpu_fake_lines.py"))


def test_per_process_figures_go_to_the_gpu_bound_function(runner: Runner, fake_nvml: Path):
    # Another process keeps the device 30% busy and holds 1000 MB: per-process figures
    # must leave it out.
    # Longer than the other runs: on a crowded machine the function may get few samples,
    # and a reading or two straddling its end weighs less.
    _, profile = _run(runner, fake_nvml, "other_util=30,other_mb=1000", "0", "1.5")
    assert profile["gpu_profiled"] is True
    assert profile["gpu_per_process"] is True
    assert [d["name"] for d in profile["gpu_devices"]] == ["Fake GPU 0"]
    assert profile["gpu_note"] is None
    gpu, host, idle = _fn(profile, "gpu_bound"), _fn(profile, "host_bound"), _fn(profile, "idler")
    # The function ran at 90% of the GPU (never 100%: the other process's 30% is not ours).
    assert 60 <= gpu["gpu_util_pct"] <= 92, gpu
    assert host["gpu_util_pct"] <= 25, host
    assert gpu["gpu_share"] >= 0.5 and gpu["gpu_share"] >= 2 * host["gpu_share"], (gpu, host)
    # The idle thread slept beside the GPU-bound work: it gets (almost) none of it.
    assert idle["gpu_share"] <= 0.15, idle
    # Its own 2000 MB, not the device's 3000.
    assert 0.8 * MB_SET <= gpu["gpu_peak_mem_mb"] <= 1.05 * MB_SET, gpu
    assert host["gpu_mem_mb"] <= 0.5 * MB_SET, host
    assert gpu["gpu_busy_s"] > host["gpu_busy_s"]
    assert profile["gpu_peak_mem_mb"] >= gpu["gpu_peak_mem_mb"] - 1e-6
    assert profile["gpu_timeline"], "no GPU memory timeline"


def test_sparse_per_process_samples_stand_until_the_next(runner: Runner, fake_nvml: Path):
    # Drivers make per-process samples a few times a second while spyglass reads every
    # 10 ms: the readings between two samples must not count as idle.
    _, profile = _run(runner, fake_nvml, "sample_ms=100")
    assert profile["gpu_per_process"] is True
    gpu, host = _fn(profile, "gpu_bound"), _fn(profile, "host_bound")
    assert gpu["gpu_util_pct"] >= 55, gpu
    assert host["gpu_util_pct"] <= 30, host


def test_device_wide_figures_are_said_to_be(runner: Runner, fake_nvml: Path):
    proc, profile = _run(runner, fake_nvml, "per_process=0,other_util=30", report=True)
    assert profile["gpu_per_process"] is False
    device = profile["gpu_devices"][0]
    assert device["util_per_process"] is False and device["memory_per_process"] is False
    gpu, host = _fn(profile, "gpu_bound"), _fn(profile, "host_bound")
    # The device's figures: the other process's 30% shows on the host-bound function too.
    assert gpu["gpu_util_pct"] >= 80, gpu
    assert 15 <= host["gpu_util_pct"] <= 60, host
    assert "GPU%" in proc.stderr and "whole device" in proc.stderr, proc.stderr


def test_two_devices_are_told_apart(runner: Runner, fake_nvml: Path):
    _, profile = _run(runner, fake_nvml, "devices=2", "1")
    assert len(profile["gpu_devices"]) == 2
    gpu = _fn(profile, "gpu_bound")
    first, second = gpu["gpu_devices"]
    assert second["util_pct"] >= 60 and first["util_pct"] <= 5, gpu
    assert second["peak_mem_mb"] >= 0.8 * MB_SET and first["peak_mem_mb"] == 0, gpu
    # All devices together: the busy one's 90% averaged with the idle one's 0%.
    assert 30 <= gpu["gpu_util_pct"] <= 46, gpu
    assert profile["gpu_devices"][1]["busy_s"] > profile["gpu_devices"][0]["busy_s"]


def test_driver_failing_mid_run_ends_gpu_sampling_with_a_note(runner: Runner, fake_nvml: Path):
    # Every reading reads utilisation once: the GPU is lost after about 10 intervals.
    proc, profile = _run(runner, fake_nvml, "fail_after=10", report=True)
    assert profile["gpu_profiled"] is True
    assert "NVML stopped answering" in profile["gpu_note"], profile["gpu_note"]
    assert "GPU is lost" in profile["gpu_note"]
    assert profile["gpu_observed_s"] < 0.5 * profile["elapsed_s"], profile["gpu_observed_s"]
    # The CPU profile is whole.
    assert _fn(profile, "host_bound")["samples"] > 0
    assert "NVML stopped answering" in proc.stderr


def test_a_gpu_nvml_cannot_read_is_said_to_be(runner: Runner, fake_nvml: Path):
    proc, profile = _run(runner, fake_nvml, "fail_after=0", report=True)
    assert "NVML could not read the GPU" in profile["gpu_note"], profile["gpu_note"]
    assert profile["gpu_observed_s"] == 0
    assert "NVML could not read the GPU" in proc.stderr


def test_forked_child_opens_nvml_again(runner: Runner, fake_nvml: Path):
    proc, profile = _run(runner, fake_nvml, "", "0", "0.8", "fork")
    assert "child init pid is own: True" in proc.stdout, proc.stdout
    assert profile["gpu_profiled"] is True
    gpu = _fn(profile, "gpu_bound")
    assert gpu["gpu_util_pct"] >= 60, gpu
    assert gpu["gpu_peak_mem_mb"] >= 0.8 * MB_SET, gpu


def _cost(runner: Runner, env: dict[str, str], *options: str) -> dict[str, Any]:
    proc, profile = runner.spyglass([program("gpu_fake_cost.py")], options=options, env=env)
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    assert not any(key.startswith("gpu") for key in profile), sorted(profile)
    return {"profile": profile, **stdout_json(proc)}


def test_no_gpu_and_no_nvml_load_and_start_nothing(runner: Runner, fake_nvml: Path):
    absent = _cost(runner, _env(runner, runner.workdir / "no-such-libnvidia-ml.so"))
    off = _cost(runner, _env(runner, fake_nvml), "--no-gpu")
    assert off["mapped"] is False, "--no-gpu loaded NVML"
    assert absent["threads"] == off["threads"]
    proc, profile = runner.spyglass(
        [program("gpu_fake_cost.py")], options=["--gpu"], env=_env(runner, fake_nvml)
    )
    on = stdout_json(proc)
    assert profile is not None and profile["gpu_profiled"] is True
    # Loaded, and one thread more: the GPU engine's.
    assert on["mapped"] is True and on["threads"] == off["threads"] + 1, (on, off)


def test_api_start_takes_gpu(runner: Runner, fake_nvml: Path):
    proc = runner.python([program("gpu_fake_api.py")], env=_env(runner, fake_nvml))
    assert proc.returncode == 0, proc.stderr
    out = stdout_json(proc)
    assert out["with"] is True and out["without"] is False, out
    assert len(out["util"]) == 1 and out["util"][0] >= 50, out
