"""Threads of a few milliseconds each, as a thread-per-request server's handlers are, that
wait twice: 3 ms on a "database" and 1 ms on a "cache". Prints, as JSON on stdout, the wall
time each wait took as the threads measured it, less the time the thread spent queued for
a CPU meanwhile (the kernel's count): woken, a thread waits for a CPU, not for anything of
its own, and on a loaded machine that is a large part of a 1 ms sleep's wall time."""

import json
import sys
import threading
import time

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 600
lock = threading.Lock()
waited = {"db": 0.0, "cache": 0.0}


def run_delay():
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


def handle():
    sum(k * k for k in range(2000))
    q0 = run_delay()
    t0 = time.perf_counter()
    time.sleep(0.003)  # wait:db
    t1 = time.perf_counter()
    q1 = run_delay()
    t2 = time.perf_counter()
    time.sleep(0.001)  # wait:cache
    t3 = time.perf_counter()
    q2 = run_delay()
    with lock:
        waited["db"] += t1 - t0 - (q1 - q0)
        waited["cache"] += t3 - t2 - (q2 - q1)


def main():
    live = []
    for _ in range(THREADS):
        thread = threading.Thread(target=handle)
        thread.start()
        live.append(thread)
        if len(live) >= 4:
            live.pop(0).join()
    for thread in live:
        thread.join()
    print(json.dumps(waited))


if __name__ == "__main__":
    main()
