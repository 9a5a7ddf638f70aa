"""A call into an installed library (poolib, from tests/programs/libs) that hands its work to
the library's own pool of Python threads and waits for it; then a thread of the library's
working in the background while the program computes on its own; then a callback of the
program's, called by the library, asleep while a thread of the library's spins. Prints, as
JSON on stdout,
the call's CPU (every thread's, process_time), the bytes its result keeps, and the
program's own computing CPU (thread_time)."""

import json
import time

import poolib

KEPT = []  # what the call made, kept to the end


def compute(seconds):
    end = time.thread_time() + seconds
    total = 0
    while time.thread_time() < end:
        for i in range(2000):
            total += i % 7
    return total


def nap():
    time.sleep(0.4)  # own:nap


def main():
    t0 = time.process_time()
    KEPT.extend(poolib.load(16, 0.03))  # pool:load
    load_cpu = time.process_time() - t0
    kept_mb = sum(len(block) for chunk in KEPT for block in chunk) / (1 << 20)  # MiB, as profiles
    time.sleep(0.1)  # pool:pause
    background = poolib.spin_in_background(0.4)
    t1 = time.thread_time()
    compute(0.3)  # own:compute
    own_cpu = time.thread_time() - t1
    background.join()
    poolib.call_back(nap, 0.25)  # pool:callback
    print(json.dumps({"load_cpu_s": load_cpu, "kept_mb": kept_mb, "own_cpu_s": own_cpu}))


if __name__ == "__main__":
    main()
