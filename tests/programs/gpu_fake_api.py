"""spyglass.start(gpu=...) against the fake NVML: prints which of two API runs, one with
the GPU and one without, have GPU figures, and the GPU-bound function's utilisation."""

import ctypes
import json
import os
import time

import spyglass

fake = ctypes.CDLL(os.environ["SPYGLASS_NVML_LIBRARY"])
fake.fake_nvml_set.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_ulonglong]


def gpu_bound(seconds):
    fake.fake_nvml_set(0, 80, 100 << 20)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
    fake.fake_nvml_set(0, 0, 0)


def profiled(gpu):
    spyglass.start(gpu=gpu)
    gpu_bound(0.5)
    return spyglass.stop()


with_gpu, without = profiled(True), profiled(False)
util = [
    f["gpu_util_pct"]
    for entry in with_gpu["files"].values()
    for f in entry["functions"]
    if f["name"].endswith("gpu_bound")
]
print(
    json.dumps(
        {"with": "gpu_profiled" in with_gpu, "without": "gpu_profiled" in without, "util": util}
    )
)
