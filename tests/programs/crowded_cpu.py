"""A CPU-bound loop on a crowded machine: busy shell loops (not Python, so not profiled)
take the CPUs away from it for part of the time. Being runnable and waiting for a CPU is
not the program waiting for anything of its own. Prints, as JSON, the loop's CPU time and
the time it spent runnable but off the CPU (the kernel's run delay for this thread)."""

import json
import os
import subprocess
import time


def run_delay_s():
    with open(f"/proc/self/task/{threading_id()}/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


def threading_id():
    import threading

    return threading.get_native_id()


def spin(seconds):
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:  # crowded:loop
        n += sum(range(300))  # crowded:spin
    return n


hogs = [
    subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2 * (os.cpu_count() or 1))
]
try:
    time.sleep(0.2)
    delay, cpu = run_delay_s(), time.thread_time()
    spin(0.5)
    delay, cpu = run_delay_s() - delay, time.thread_time() - cpu
finally:
    for hog in hogs:
        hog.kill()
        hog.wait()
print(json.dumps({"cpu_s": cpu, "run_delay_s": delay}))
