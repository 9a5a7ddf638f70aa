"""Shared driver of the overhead workloads (imported by each workload script).

A workload calls ``run(step)``. ``step(i)`` does one unit of work and returns an int that
goes into a checksum printed at the end (``checksum=N``), so a profiler that changes what
the program computes is caught.

How much work:
- ``BENCH_ITERATIONS=N`` (or ``--iterations N``) runs exactly N units. The harness uses
  this, so every profiler runs the same work.
- otherwise ``BENCH_DURATION=S`` (or ``--duration S``, default 2.0) runs units until S
  seconds have passed and writes ``bench-iterations=N`` on stderr (the harness calibrates
  with this, in a plain run).
"""

import os
import sys
import time

_MASK = (1 << 61) - 1


def _option(flag, env):
    argv = sys.argv[1:]
    for k, arg in enumerate(argv):
        if arg == flag and k + 1 < len(argv):
            return argv[k + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return os.environ.get(env)


def _mix(checksum, value):
    return (checksum * 1000003 + int(value)) & _MASK


def run(step, variant=None):
    """Run ``step`` for the configured amount of work and print the checksum."""
    if variant is not None:
        sys.stderr.write(f"bench-variant={variant}\n")
    iterations = _option("--iterations", "BENCH_ITERATIONS")
    checksum = 0
    if iterations is not None:
        for i in range(int(iterations)):
            checksum = _mix(checksum, step(i))
    else:
        duration = float(_option("--duration", "BENCH_DURATION") or 2.0)
        start = time.perf_counter()
        i = 0
        while True:
            checksum = _mix(checksum, step(i))
            i += 1
            if time.perf_counter() - start >= duration:
                break
        sys.stderr.write(f"bench-iterations={i}\n")
    print(f"checksum={checksum}")
