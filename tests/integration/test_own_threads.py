"""spyglass's own threads in a profiled process carry names of their own, so that `top -H`,
gdb, py-spy and /proc tell them from the program's; the program's threads keep theirs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import Runner, line_figures, stdout_json

_LIST = """
import json, os, sys, threading, time
ready = threading.Event()
done = threading.Event()
def worker():
    ready.set()
    done.wait()
t = threading.Thread(target=worker, name="program-worker")
t.start()
ready.wait()
time.sleep(0.1)  # a few intervals: every thread of spyglass's has started
names = {}
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{tid}/comm") as f:
        names[int(tid)] = f.read().strip()
done.set()
t.join()
process = os.path.basename(sys.executable)[:15]  # what exec named the process
print(json.dumps({"names": names, "main": os.getpid(), "worker": t.native_id, "process": process}))
"""


def test_spyglass_threads_are_named_and_the_programs_keep_their_names(
    runner: Runner, tmp_path: Path
) -> None:
    script = tmp_path / "names.py"
    script.write_text(_LIST, encoding="utf-8")
    proc, profile = runner.spyglass([script], options=["--cpu-only"])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    seen = stdout_json(proc)
    names = {int(k): v for k, v in seen["names"].items()}
    # The program's threads: named as exec named its process, as under plain python.
    assert names[seen["main"]] == names[seen["worker"]] == seen["process"], names
    ours = sorted(v for k, v in names.items() if k not in (seen["main"], seen["worker"]))
    assert ours == ["spyglass-ctl", "spyglass-upkeep", "spyglass-wait"], names


# The program's last lines: how often each thread of the process was woken (a sleep that
# ends is a voluntary context switch, which the kernel counts), by name.
_WOKEN = """
woken = {}
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{tid}/comm") as f:
        name = f.read().strip()
    with open(f"/proc/self/task/{tid}/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                woken[name] = int(line.split()[1])
"""

_BUSY = (
    """
import json, os, time
t0 = time.perf_counter()
x = 0
while time.perf_counter() - t0 < 0.6:
    for i in range(1000):
        x += i
"""
    + _WOKEN
    + "print(json.dumps(woken))\n"
)


def test_a_thread_of_spyglass_with_nothing_to_do_is_not_woken_every_interval(
    runner: Runner, tmp_path: Path
) -> None:
    """A program that never waits gives the wait thread nothing to do: the control thread's
    ticks read its clock, and the wait thread is woken only when a wait needs the GIL. A
    thread woken every interval costs the run tens of microseconds each time (docs/
    cost-model.md). A sleep that ends is a voluntary context switch, which the kernel
    counts."""
    script = tmp_path / "busy.py"
    script.write_text(_BUSY, encoding="utf-8")
    proc, profile = runner.spyglass([script], options=["--cpu-only"])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    woken = stdout_json(proc)
    # 0.6 s is some 60 intervals: the control thread ticks at each (the count works) ...
    assert woken["spyglass-ctl"] >= 20, woken
    # ... the wait thread is woken for the start-up's few looks with the GIL alone.
    assert woken["spyglass-wait"] < 20, woken
    assert woken["spyglass-upkeep"] < 20, woken


_BUSY_CPU = (
    """
import json, os, time
t0, w0 = time.thread_time(), time.perf_counter()
x = 0
while time.thread_time() - t0 < 0.4:  # CPU time: as many samples however loaded the machine
    for i in range(1000):
        x += i
wall = time.perf_counter() - w0
"""
    + _WOKEN
    + 'print(json.dumps({"woken": woken, "wall": wall}))\n'
)


def test_a_short_interval_samples_more_often_but_does_not_tick_more_often(
    runner: Runner, tmp_path: Path
) -> None:
    """The control thread's tick costs its wake-up whatever it finds: at a 1 ms interval,
    ticking every interval took 4 % of a busy program's CPU. Samples come every interval;
    the ticks that drain them, no more often than every 10 ms (limits.hpp, kMinTickNs)."""
    script = tmp_path / "busy.py"
    script.write_text(_BUSY_CPU, encoding="utf-8")
    proc, profile = runner.spyglass([script], options=["--cpu-only", "--interval", "0.001"])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    seen = stdout_json(proc)
    ticks = seen["woken"]["spyglass-ctl"]
    # One tick per 10 ms of the loop's wall time (and start-up's few), where ticking every
    # interval woke it 556 times in 0.6 s.
    assert 0.3 * seen["wall"] / 0.01 <= ticks <= 2 * seen["wall"] / 0.01 + 30, seen
    assert profile["interval_s"] == pytest.approx(0.001)
    # Still sampled (how often, the kernel bounds: it checks CPU timers on its own tick, 100
    # to 1000 times a second, so 0.4 s of CPU has 40 samples at least).
    assert profile["samples"] >= 30, profile["samples"]


_IDLE_POOL = """
import json, os, threading, time
stop = threading.Event()
def idle():
    stop.wait()  # idle:wait
pool = [threading.Thread(target=idle) for _ in range(20)]
for t in pool:
    t.start()
t0 = time.perf_counter()
x = 0
while time.perf_counter() - t0 < 0.6:
    for i in range(1000):
        x += i
found = {}
for tid in os.listdir("/proc/self/task"):
    base = f"/proc/self/task/{tid}/"
    with open(base + "comm") as f:
        name = f.read().strip()
    if not name.startswith("spyglass-"):
        continue
    with open(base + "io") as f:
        reads = int(next(line for line in f if line.startswith("syscr:")).split()[1])
    with open(base + "status") as f:
        woken = int(next(line for line in f if line.startswith("voluntary_ctxt")).split()[1])
    found[name] = {"reads": reads, "woken": woken}
stop.set()
for t in pool:
    t.join()
print(json.dumps(found))
"""


def test_idle_threads_are_not_read_again_while_they_have_not_run(
    runner: Runner, tmp_path: Path
) -> None:
    """A pool's idle threads stay blocked where they were found: one that has not run
    since cannot have left its call. Reading each one's /proc state and stack again every
    interval cost 18 µs a thread a tick (20 idle threads: 3.7 % of a CPU); the kernel
    counts the read system calls each thread makes."""
    if not Path(f"/proc/self/task/{os.getpid()}/io").exists():
        pytest.skip("no per-thread I/O accounting in this kernel")
    script = tmp_path / "pool.py"
    script.write_text(_IDLE_POOL, encoding="utf-8")
    proc, profile = runner.spyglass([script], options=["--cpu-only"])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    found = stdout_json(proc)
    ticks = found["spyglass-ctl"]["woken"]
    reads = sum(t["reads"] for t in found.values())
    assert ticks >= 20, found
    # Read every tick, the 20 threads' state files alone made more than 20 reads a tick.
    assert reads < 5 * ticks, found
    # Their wait still goes where they block: 20 threads blocked some 0.6 s each.
    wait = float(line_figures(profile, script, "# idle:wait")["wait_s"])
    assert 0.8 * 20 * 0.6 <= wait <= 1.2 * 20 * 0.7, wait
