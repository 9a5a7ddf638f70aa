"""Overhead: each workload run with no profiler and under every profiler, interleaved.

Per workload, a plain calibration run (which also warms the caches) finds how many units
of work fill the target duration; every timed run then does exactly that many units, so
a slower profiler takes longer instead of doing less. Within a repetition the profilers
run round-robin in an order shuffled with a fixed seed, so drift in the machine's load
spreads over all of them.

Workloads that use one CPU run pinned to one CPU (the last the harness may use), and the
harness itself moves off it: the program, the profiler's own threads and processes then
share that CPU, so a wall-time ratio is the whole cost of profiling, and runs no longer
vary with where the scheduler puts them. Workloads in PARALLEL use several CPUs and run
unpinned.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator

from . import proc
from .context import WORKLOAD_DIR, Context
from .env import log
from .profilers import BY_KEY

WORKLOADS = [
    "async_tree",
    "async_tree_io",
    "async_tree_cpu_io_mixed",
    "async_tree_memoization",
    "docutils",
    "fannkuch",
    "mdp",
    "pprint",
    "raytrace",
    "sympy",
    "threads",
    "alloc",
]
QUICK_WORKLOADS = ["async_tree", "fannkuch", "mdp", "raytrace", "threads", "alloc"]
PARALLEL = {"threads"}  # workloads whose threads run on several CPUs at once
KEEP_OUTPUT_ON_FAILURE = ("stdout", "stderr")
# alloc frees 1 MiB buffers: glibc then moves its mmap threshold above them and serves them
# from the heap, whose top it gives back to the kernel (and faults in again) only when no
# other block sits above them. Whether one does depends on what was allocated before:
# importing spyglass's extension alone made 300 such buffers 16x cheaper (0.26 s to
# 0.016 s, no trimming). A fixed threshold (every buffer its own mapping, in every run)
# keeps the ratio about the profiler rather than about heap layout.
WORKLOAD_ENV = {"alloc": {"MALLOC_MMAP_THRESHOLD_": "131072"}}


def script(name: str):
    return WORKLOAD_DIR / f"bm_{name}.py"


def timeout_for(plain_wall: float) -> float:
    """Kill a run after this long: 10x the plain run plus 15 s for start-up."""
    return 15.0 + 10.0 * plain_wall


def pin_cpu() -> int | None:
    """The CPU single-CPU workloads run on: the last one the harness may use, if it may use
    at least two (one is left to the harness)."""
    try:
        mine = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    return mine[-1] if len(mine) >= 2 else None


@contextlib.contextmanager
def harness_off(cpu: int | None) -> Iterator[None]:
    """The harness itself runs on the other CPUs while the pinned runs use ``cpu``."""
    if cpu is None:
        yield
        return
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, mine - {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, mine)


def cpus_for(name: str, cpu: int | None, every: set[int] | None) -> set[int] | None:
    """Where a workload's runs go: ``cpu`` alone, or for PARALLEL ones ``every`` CPU the
    harness had (it has moved off ``cpu``, and a child would inherit that)."""
    if cpu is None:
        return None
    return every if name in PARALLEL else {cpu}


def calibrate(ctx: Context, name: str, duration: float, cpus: set[int] | None) -> dict:
    plain = BY_KEY["none"]
    extra = {"BENCH_DURATION": str(duration), **WORKLOAD_ENV.get(name, {})}
    record, _ = ctx.run(plain, script(name), extra, 600, "calib", cpus)
    if not record["ok"]:
        return {"ok": False, "reason": record["reason"]}
    iterations = proc.marker(record["stderr"], "bench-iterations")
    checksum = proc.marker(record["stdout"], "checksum")
    if iterations is None or checksum is None:
        return {"ok": False, "reason": "workload did not report iterations/checksum"}
    return {
        "ok": True,
        "duration_s": duration,
        "iterations": int(iterations),
        "checksum": checksum,
        "wall_s": record["wall_s"],
        "variant": proc.marker(record["stderr"], "bench-variant"),
    }


def _one(ctx: Context, p, name: str, calib: dict, cpus: set[int] | None) -> dict:
    extra = {"BENCH_ITERATIONS": str(calib["iterations"]), **WORKLOAD_ENV.get(name, {})}
    record, out = ctx.run(p, script(name), extra, timeout_for(calib["wall_s"]), name, cpus)
    ctx.done(out)
    if record["ok"]:
        got = proc.marker(record["stdout"], "checksum")
        if got != calib["checksum"]:
            record["ok"] = False
            record["reason"] = f"wrong checksum {got} (plain python: {calib['checksum']})"
    if record["ok"]:
        threads = proc.threads_cpu(record.get("stdout", ""))
        if threads is not None:
            record["threads_cpu_s"] = threads
        for k in KEEP_OUTPUT_ON_FAILURE:
            record.pop(k, None)
    return record


def measure(ctx: Context, names: list[str], reps: int, duration: float, seed: int) -> dict:
    cpu = pin_cpu()
    every = os.sched_getaffinity(0) if cpu is not None else None
    with harness_off(cpu):
        return _measure(ctx, names, reps, duration, seed, cpu, every)


def _measure(
    ctx: Context,
    names: list[str],
    reps: int,
    duration: float,
    seed: int,
    cpu: int | None,
    every: set[int] | None,
) -> dict:
    rng = random.Random(seed)
    result: dict = {
        "repetitions": reps,
        "duration_s": duration,
        "seed": seed,
        "pinned_cpu": cpu,
        "parallel": sorted(PARALLEL & set(names)),
        "workloads": {},
    }
    for name in names:
        log(f"overhead: calibrating {name} ({duration} s)")
        calib = calibrate(ctx, name, duration, cpus_for(name, cpu, every))
        result["workloads"][name] = {"calibration": calib, "runs": []}
        if not calib["ok"]:
            log(f"overhead: {name} failed in plain python: {calib['reason']}")
    skip: dict[tuple[str, str], str] = {}
    for rep in range(reps):
        for name in names:
            entry = result["workloads"][name]
            if not entry["calibration"]["ok"]:
                continue
            order = list(ctx.profilers)
            rng.shuffle(order)
            log(f"overhead: rep {rep + 1}/{reps} {name}: " + " ".join(p.key for p in order))
            for position, p in enumerate(order):
                why = ctx.unavailable.get(p.key) or skip.get((name, p.key))
                if why:
                    record = {"ok": False, "skipped": True, "reason": why}
                else:
                    record = _one(ctx, p, name, entry["calibration"], cpus_for(name, cpu, every))
                    if record.get("timed_out"):
                        skip[(name, p.key)] = "timed out in an earlier repetition"
                    if not record["ok"]:
                        log(f"overhead: {name} under {p.key} failed: {record['reason']}")
                record.update(rep=rep, profiler=p.key, position=position)
                entry["runs"].append(record)
    return result


STARTUP_SCRIPTS = ("empty", "short", "children")
CHILDREN = 10  # python -c pass children started by workloads/children.py


def startup(ctx: Context, reps: int, seed: int, scripts: tuple[str, ...] = STARTUP_SCRIPTS) -> dict:
    """Wall time per profiler of an empty script, of one that sleeps 0.2 s and of one that
    starts CHILDREN `python -c pass` children (the per-child cost: its time less the empty
    script's, over CHILDREN); each repetition runs every (script, profiler) pair, shuffled."""
    rng = random.Random(seed + 1)
    runs = []
    log(f"startup: {reps} repetitions of {', '.join(scripts)}")
    extra = {"children": {"BENCH_CHILDREN": str(CHILDREN)}}
    for rep in range(reps):
        order = [(s, p) for s in scripts for p in ctx.profilers]
        rng.shuffle(order)
        for position, (name, p) in enumerate(order):
            base = {"rep": rep, "profiler": p.key, "script": name, "position": position}
            if p.key in ctx.unavailable:
                runs.append(
                    {**base, "ok": False, "skipped": True, "reason": ctx.unavailable[p.key]}
                )
                continue
            script_path = WORKLOAD_DIR / f"{name}.py"
            record, out = ctx.run(p, script_path, extra.get(name), 120, f"startup-{name}")
            ctx.done(out)
            if record["ok"]:
                for k in KEEP_OUTPUT_ON_FAILURE:
                    record.pop(k, None)
            runs.append({**record, **base})
    result = {"repetitions": reps, "scripts": list(scripts), "runs": runs}
    if "children" in scripts:
        result["children"] = CHILDREN
    return result
