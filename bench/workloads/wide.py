"""wide: the shape that makes a profile and a profiler's own tables big. 25 modules of 40
functions each (generated into a temporary directory and imported, so they are real
files), run by 600 threads over the run, 20 at a time, each calling a spread of them for
its share of BENCH_DURATION seconds (default 60). bench/harness/footprint.py runs it to
measure the RSS a profiler adds and the size of the profile it writes; it is timed by the
clock, not by a count of units, since no speed is measured on it."""

import importlib
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

FILES = 25
FUNCTIONS = 40
THREADS = 600
AT_ONCE = 20

_dir = tempfile.TemporaryDirectory(prefix="bench-wide-")
for f in range(FILES):
    body = [
        f"def f{k}(n):\n"
        f"    total = {k}\n"
        f"    for i in range(n):\n"
        f"        total = (total * 31 + i) % 1000003\n"
        f"    return total\n"
        for k in range(FUNCTIONS)
    ]
    Path(_dir.name, f"wide_mod{f}.py").write_text("\n".join(body))
sys.path.insert(0, _dir.name)
MODULES = [importlib.import_module(f"wide_mod{f}") for f in range(FILES)]
FUNCS = [getattr(m, f"f{k}") for m in MODULES for k in range(FUNCTIONS)]


def worker(seed, until, out, slot):
    total, j = 0, 0
    while time.monotonic() < until:
        total += FUNCS[(seed * 7 + j * 13) % len(FUNCS)](200)
        j += 1
    out[slot] = total


def main():
    duration = float(os.environ.get("BENCH_DURATION", "60"))
    batches = THREADS // AT_ONCE
    checksum = 0
    for b in range(batches):
        until = time.monotonic() + duration / batches
        out = [0] * AT_ONCE
        threads = [
            threading.Thread(
                target=worker,
                args=(b * AT_ONCE + s, until, out, s),
                name=f"request-{b * AT_ONCE + s}",
            )
            for s in range(AT_ONCE)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        checksum += sum(out) > 0
    print(f"threads={batches * AT_ONCE} batches_with_work={checksum}")


main()
