"""Says whether the fake NVML (SPYGLASS_NVML_LIBRARY) is loaded in this process and how
many threads it has, after some work: with no NVML, or --no-gpu, spyglass must have loaded
nothing and started nothing for the GPU."""

import json
import os
import time


def work():
    end = time.perf_counter() + 0.3
    while time.perf_counter() < end:
        pass


work()
library = os.path.realpath(os.environ.get("SPYGLASS_NVML_LIBRARY", "libnvidia-ml.so.1"))
with open("/proc/self/maps", encoding="utf-8") as maps:
    mapped = any(library in line for line in maps)
print(json.dumps({"mapped": mapped, "threads": len(os.listdir("/proc/self/task"))}))
