"""Two awaits in a row, the first 0.4 s, then three of 0.1 s, while spyglass's wait thread
(which scans the tasks) is kept off the CPUs for 0.3 s across the end of the first: a real-time
busy loop holds the one CPU that thread is then allowed. Needs root (SCHED_FIFO) and two
CPUs. Prints, as JSON, each await's measured time and whether the stall took place."""

import asyncio
import json
import os
import subprocess
import sys
import time

measured = {"first": 0.0, "then": 0.0, "stalled": False}


def scanning_thread():
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as f:
            if f.read().strip() == "spyglass-wait":
                return int(tid)
    return None


def stall(seconds):
    """Keeps the scanning thread off the CPUs for `seconds`, from now."""
    tid = scanning_thread()
    cpus = sorted(os.sched_getaffinity(0))
    if tid is None or len(cpus) < 2:
        return None
    hog_cpu, ours = cpus[0], set(cpus[1:])
    os.sched_setaffinity(0, ours)  # the loop's thread
    os.sched_setaffinity(tid, {hog_cpu})
    code = (
        f"import time\nend = time.perf_counter() + {seconds}\nwhile time.perf_counter() < end: pass"
    )
    hog = subprocess.Popen(
        ["chrt", "-f", "50", "taskset", "-c", str(hog_cpu), sys.executable, "-c", code]
    )

    def done():
        hog.wait()
        os.sched_setaffinity(tid, set(cpus))
        os.sched_setaffinity(0, set(cpus))
        measured["stalled"] = hog.returncode == 0

    return done


async def main():
    loop = asyncio.get_running_loop()
    started = time.perf_counter()
    ending = []
    loop.call_later(0.25, lambda: ending.append(stall(0.3)))
    await asyncio.sleep(0.4)  # await:first
    measured["first"] = time.perf_counter() - started
    for _ in range(3):
        started = time.perf_counter()
        await asyncio.sleep(0.1)  # await:then
        measured["then"] += time.perf_counter() - started
    if ending and ending[0] is not None:
        ending[0]()


asyncio.run(main())
print(json.dumps(measured))
