"""A loop that blocks 20 ms, then computes about 20 ms of its own CPU, as a request loop
waits for a reply and then renders it. Prints the time it spent blocked: the sleeps' wall
time less what the thread spent queued for a CPU meanwhile (the kernel's run delay), which
is not the program's wait."""

import json
import time


def run_delay():
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


def compute(seconds):
    end = time.thread_time() + seconds
    total = 0
    while time.thread_time() < end:
        total += sum(range(500))  # wait:compute
    return total


blocked = 0.0
for _ in range(60):
    start, queued = time.perf_counter(), run_delay()
    time.sleep(0.02)  # wait:block
    blocked += time.perf_counter() - start - (run_delay() - queued)
    compute(0.02)
print(json.dumps({"blocked_s": blocked}))
