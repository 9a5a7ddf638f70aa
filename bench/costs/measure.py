#!/usr/bin/env python3
"""The cost model: what spyglass costs a program per event, in nanoseconds.

    python bench/costs/measure.py            # 7 interleaved repetitions
    python bench/costs/measure.py --smoke    # one tiny repetition (CI)
    python bench/costs/measure.py --json OUT # also write the figures as JSON

Run it with an interpreter that has spyglass installed. Three kinds of event:

- a CPU sample: the handler's own work, run directly as the timer signal would run it
  (spyglass._native.time_sample_handler), plus what the kernel's delivery of a signal to
  an empty handler costs (hook_loops.c's hl_signal_roundtrip: an upper bound, since raise()
  adds a system call that a timer expiry does not make);
- a hooked allocation or copy: loops of malloc/free and memcpy made from C (hook_loops.c,
  so every call goes through an offset table as a library's would), and PyObject_Malloc
  through str.split, timed with profiling off, CPU-only and full: the difference per call
  is the hook's cost, amortised over the memory samples it takes;
- a memory sample, all of it: the hook's stack walk and record on the allocating thread,
  and the control thread's draining (the stack resolved, the line's figures and timelines
  updated, the journal written), as process CPU time per sample of 16 KiB `bytes` made
  at a stack depth of 40 with a 4 KiB window (each is sampled), less the same loop with
  profiling off and less start() and stop() with no allocation between them;
- nothing else runs on the program's threads: the report is off them (its cost shows in
  bench/run.py's CPU-time table);
- and off them, spyglass's own threads in the profiled process (control, wait, upkeep):
  their CPU per second of run of a busy program and of one that sleeps 1 ms at a time,
  read by the program itself from /proc (the threads are named spyglass-*).

Repetitions interleave the three modes in a shuffled order; a figure is the median over
repetitions of (mode - median of the off runs), with the min-max of the repetitions.
Nothing is asserted: the numbers are for people (docs/cost-model.md) and for spotting
regressions in CI's log.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = ("off", "cpu", "full")


def build_loops(dest: Path) -> ctypes.CDLL:
    cc = sysconfig.get_config_var("CC") or ""
    argv = shlex.split(cc) if cc and shutil.which(shlex.split(cc)[0]) else []
    if not argv:
        found = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if found is None:
            raise SystemExit("costs: no C compiler found to build hook_loops.c")
        argv = [found]
    target = dest / "libhookloops.so"
    cmd = [*argv, "-O2", "-fno-builtin", "-shared", "-fPIC", str(HERE / "hook_loops.c")]
    done = subprocess.run([*cmd, "-o", str(target)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"costs: building hook_loops.c failed:\n{done.stderr}")
    lib = ctypes.CDLL(str(target))
    for name in ("hl_malloc_free", "hl_memcpy", "hl_mmap_munmap"):
        getattr(lib, name).argtypes = [ctypes.c_long, ctypes.c_long]
        getattr(lib, name).restype = ctypes.c_longlong
    for name in ("hl_empty", "hl_signal_roundtrip"):
        getattr(lib, name).argtypes = [ctypes.c_long]
        getattr(lib, name).restype = ctypes.c_longlong
    return lib


def cases(lib: ctypes.CDLL, scale: int) -> dict[str, tuple[int, Callable[[], int]]]:
    """name -> (calls per run, a function returning the run's thread CPU ns)."""
    words = "ab " * (40_000 * scale)  # two characters: one-character strings are cached

    def split() -> int:
        t0 = time.thread_time_ns()
        parts = words.split()
        del parts
        return time.thread_time_ns() - t0

    n = 100_000 * scale
    return {
        "malloc+free 64 B": (n, lambda: lib.hl_malloc_free(n, 64)),
        "malloc+free 16 KiB": (n // 4, lambda: lib.hl_malloc_free(n // 4, 16 * 1024)),
        "PyObject_Malloc+Free (str.split)": (40_000 * scale, split),
        "memcpy 64 B": (n, lambda: lib.hl_memcpy(n, 64)),
        "memcpy 4 KiB": (n // 4, lambda: lib.hl_memcpy(n // 4, 4096)),
        "memcpy 1 MiB": (max(1, n // 2000), lambda: lib.hl_memcpy(max(1, n // 2000), 1 << 20)),
        "mmap+munmap 64 KiB": (n // 20, lambda: lib.hl_mmap_munmap(n // 20, 64 * 1024)),
    }


def run_mode(mode: str, runs: dict[str, tuple[int, Callable[[], int]]]) -> dict[str, float]:
    import spyglass

    if mode != "off":
        spyglass.start(memory=mode == "full", program_path=str(HERE))
    try:
        return {name: fn() / calls for name, (calls, fn) in runs.items()}
    finally:
        if mode != "off":
            spyglass.stop()


def handler_ns(calls: int, native: bool = False) -> float:
    """ns per run of the sample handler, the clock reads that time it left out; with
    `native`, runs that unwind native frames (a sample inside a C function)."""
    import spyglass
    from spyglass import _native

    spyglass.start(memory=False, program_path=str(HERE))
    try:
        if native:
            done, took, clock = _native.time_sample_handler(calls, native_context=True)
        else:
            done, took, clock = _native.time_sample_handler(calls)
    finally:
        spyglass.stop()
    if done == 0:
        raise SystemExit("costs: the sample handler did not run (no sampled thread)")
    return (took - clock) / done


MEMORY_SAMPLE_DEPTH = 40


def memory_sample_ns(count: int) -> float:
    """Process CPU ns per memory sample (see the module's doc)."""
    import spyglass

    def at_depth(depth: int, blocks: int) -> None:
        if depth > 0:
            at_depth(depth - 1, blocks)
            return
        for _ in range(blocks):
            bytes(16 * 1024)

    def timed(blocks: int, profiled: bool) -> tuple[int, int]:
        t0 = time.process_time_ns()
        if profiled:
            spyglass.start(memory=True, memory_window=4096, program_path=str(HERE))
        at_depth(MEMORY_SAMPLE_DEPTH, blocks)
        samples = 0
        if profiled:
            samples = int(spyglass.stop()["mem_samples"])
        return time.process_time_ns() - t0, samples

    # The least of three of each: CPU time only ever grows with other load on the machine.
    off = min(timed(count, profiled=False)[0] for _ in range(3))
    fixed = min(timed(0, profiled=True)[0] for _ in range(3))
    full, samples = min(timed(count, profiled=True) for _ in range(3))
    if samples == 0:
        raise SystemExit("costs: no memory sample was taken")
    return (full - off - fixed) / samples


# A program that runs for a while, busy or sleeping 1 ms at a time, then reads how much CPU
# each of spyglass's own threads (named spyglass-*) has used in its process.
_BACKGROUND = """
import json, os, sys, time
kind, seconds = sys.argv[1], float(sys.argv[2])
t0 = time.perf_counter()
x = 0
while time.perf_counter() - t0 < seconds:
    if kind == "busy":
        for i in range(1000):
            x += i
    else:
        time.sleep(0.001)
wall = time.perf_counter() - t0
own = {}
for tid in os.listdir("/proc/self/task"):
    base = "/proc/self/task/" + tid + "/"
    with open(base + "comm") as f:
        name = f.read().strip()
    if name.startswith("spyglass-"):
        with open(base + "schedstat") as f:
            own[name] = own.get(name, 0) + int(f.read().split()[0])
print(json.dumps({"wall_s": wall, "own_ns": own}))
"""
BACKGROUND_KINDS = ("busy", "sleeping")


def background_ms_per_s(kind: str, mode: str, seconds: float) -> dict[str, float]:
    """CPU milliseconds per second of run used by each of spyglass's own threads in a
    profiled program that is `kind` (see _BACKGROUND), under `spyglass run` in `mode`."""
    with tempfile.TemporaryDirectory(prefix="spyglass-costs-bg-") as tmp:
        script = Path(tmp) / "background.py"
        script.write_text(_BACKGROUND, encoding="utf-8")
        cmd = [
            sys.executable,
            "-m",
            "spyglass",
            "run",
            "--no-report",
            "-o",
            str(Path(tmp) / "p.json"),
        ]
        cmd += ["--cpu-only"] if mode == "cpu" else []
        done = subprocess.run(
            [*cmd, str(script), kind, str(seconds)], capture_output=True, text=True, timeout=300
        )
        if done.returncode != 0:
            raise SystemExit(f"costs: the {kind} program failed: {done.stderr.strip()[-300:]}")
        found = json.loads(done.stdout.strip().splitlines()[-1])
    per_s = {name: ns / 1e6 / found["wall_s"] for name, ns in found["own_ns"].items()}
    return {**per_s, "all": sum(per_s.values())}


def native_unwinding() -> bool:
    """Whether this spyglass's handler can time a native sample (older ones cannot)."""
    import inspect

    from spyglass import _native

    doc = inspect.getattr_static(_native, "time_sample_handler").__doc__ or ""
    return "native_context" in doc


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(reps: int, scale: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="spyglass-costs-") as tmp:
        lib = build_loops(Path(tmp))
        runs = cases(lib, scale)
        rng = random.Random(seed)
        per_mode: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
        handler: list[float] = []
        unwinding: list[float] = []
        delivery: list[float] = []
        memory_sample: list[float] = []
        background: dict[tuple[str, str], list[dict[str, float]]] = {
            (k, m): [] for k in BACKGROUND_KINDS for m in ("cpu", "full")
        }
        for _ in range(reps):
            order = list(MODES)
            rng.shuffle(order)
            for mode in order:
                per_mode[mode].append(run_mode(mode, runs))
            handler.append(handler_ns(2000 * scale))
            if native_unwinding():
                unwinding.append(handler_ns(2000 * scale, native=True))
            n = 20_000 * scale
            delivery.append((lib.hl_signal_roundtrip(n) - lib.hl_empty(n)) / n)
            memory_sample.append(memory_sample_ns(10_000 * scale))
            for kind in BACKGROUND_KINDS:
                for mode in ("cpu", "full"):
                    seconds = 0.3 if scale == 1 else 2.0
                    background[(kind, mode)].append(background_ms_per_s(kind, mode, seconds))
    hooks: dict[str, dict] = {}
    for name in runs:
        off = statistics.median(r[name] for r in per_mode["off"])
        entry: dict = {"off_ns": off}
        for mode in ("cpu", "full"):
            entry[mode] = summary([r[name] - off for r in per_mode[mode]])
        hooks[name] = entry
    return {
        "repetitions": reps,
        "sample": {
            "handler_ns": summary(handler),
            "signal_delivery_ns": summary(delivery),
            **({"handler_native_ns": summary(unwinding)} if unwinding else {}),
        },
        "hooks": hooks,
        "memory_sample_ns": summary(memory_sample),
        "background_ms_per_s": {
            f"{kind} {mode}": {
                name: summary([r.get(name, 0.0) for r in runs_])
                for name in sorted({n for r in runs_ for n in r})
            }
            for (kind, mode), runs_ in background.items()
        },
    }


def render(result: dict) -> str:
    s = result["sample"]
    lines = [
        f"Cost model ({result['repetitions']} repetitions; ns, median (min-max))",
        "",
        "| event | ns |",
        "|---|---|",
        f"| CPU sample: spyglass's handler | {fmt(s['handler_ns'])} |",
        *(
            [
                "| CPU sample: spyglass's handler, unwinding native callers | "
                f"{fmt(s['handler_native_ns'])} |"
            ]
            if "handler_native_ns" in s
            else []
        ),
        f"| CPU sample: kernel signal delivery (empty handler) | {fmt(s['signal_delivery_ns'])} |",
        "",
        "| hooked call | plain call | + CPU-only | + full profiling |",
        "|---|---|---|---|",
    ]
    for name, h in result["hooks"].items():
        lines.append(f"| {name} | {h['off_ns']:.1f} | {fmt(h['cpu'])} | {fmt(h['full'])} |")
    if "memory_sample_ns" in result:
        lines += [
            "",
            "| memory sample | ns |",
            "|---|---|",
            f"| hook and draining, stack depth {MEMORY_SAMPLE_DEPTH} "
            f"| {fmt(result['memory_sample_ns'])} |",
        ]
    if "background_ms_per_s" in result:
        lines += [
            "",
            "| spyglass's own threads, CPU ms per second of run | "
            + " | ".join(BACKGROUND_THREADS)
            + " | all |",
            "|---|" + "---|" * (len(BACKGROUND_THREADS) + 1),
        ]
        for run, per_thread in result["background_ms_per_s"].items():
            cells = [fmt(per_thread[n]) if n in per_thread else "—" for n in BACKGROUND_THREADS]
            lines.append(
                f"| {run} program | " + " | ".join(cells) + f" | {fmt(per_thread['all'])} |"
            )
    return "\n".join(lines) + "\n"


# The threads a CPU and memory run has (spyglass-gpu only where NVML is found).
BACKGROUND_THREADS = ("spyglass-ctl", "spyglass-wait", "spyglass-upkeep")


def fmt(v: dict[str, float]) -> str:
    return f"{v['median']:.1f} ({v['min']:.1f} to {v['max']:.1f})"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="one tiny repetition (CI)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--seed", type=int, default=20261125)
    ap.add_argument("--json", type=Path, help="write the figures here as JSON too")
    args = ap.parse_args(argv)
    reps, scale = (1, 1) if args.smoke else (args.reps, 5)
    result = measure(reps, scale, args.seed)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(render(result), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
