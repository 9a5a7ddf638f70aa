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

After the work it also prints ``bench-threads=NAME:NS,...`` (on stdout, which a
profiler's report does not fill as it can stderr): the CPU time each
thread other than the main one has used so far, summed by thread name. A profiler's own
threads in the program's process (spyglass's are named ``spyglass-*``) are measured so
by the kernel's clocks, which are steadier than the run's wall or CPU time.
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


def _threads_cpu_ns():
    """{thread name: CPU ns} of every thread but the main one, from /proc."""
    found = {}
    main = str(os.getpid())
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return found
    for tid in tids:
        if tid == main:
            continue
        base = "/proc/self/task/" + tid + "/"
        try:
            with open(base + "comm") as f:
                name = f.read().strip().replace(",", "_").replace(":", "_")
            with open(base + "schedstat") as f:
                ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile, or no schedstat in this kernel
        found[name] = found.get(name, 0) + ns
    return found


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
    threads = ",".join(f"{name}:{ns}" for name, ns in sorted(_threads_cpu_ns().items()))
    print(f"bench-threads={threads}")
    print(f"checksum={checksum}")
