"""Starts BENCH_CHILDREN (default 10) `python -c pass` children one after the other with
subprocess: the per-child start-up cost of a profiler that follows child processes."""

import os
import subprocess
import sys

for _ in range(int(os.environ.get("BENCH_CHILDREN", "10"))):
    subprocess.run([sys.executable, "-c", "pass"], check=True)
