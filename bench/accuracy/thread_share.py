"""Ground truth for CPU time in threads.

The main thread starts WORKERS threads that run ``worker`` (pure-Python CPU work) and then
only waits for them. Each worker measures its own CPU time (time.thread_time); at the end
the program writes the workers' CPU time and the whole process's CPU time (getrusage) to
the JSON file named by BENCH_TRUTH_FILE. A profiler should put ``worker``'s share of the
CPU time near ``worker_share``.

BENCH_MODE=calibrate: write the per-worker iteration count giving about BENCH_TOTAL_S
seconds of CPU time in all. BENCH_MODE=run (default): run BENCH_ITERATIONS per worker.
"""

import json
import os
import resource
import threading
import time

WORKERS = 2


def worker(n, out, slot):
    start = time.thread_time()
    acc = slot
    for k in range(n):
        acc = (acc * 1103515245 + k) & 0x7FFFFFFF
    out[slot] = time.thread_time() - start


def write(payload):
    with open(os.environ["BENCH_TRUTH_FILE"], "w") as fh:
        json.dump(payload, fh)


def run_workers(n):
    out = [0.0] * WORKERS
    threads = [threading.Thread(target=worker, args=(n, out, k)) for k in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def main():
    if os.environ.get("BENCH_MODE") == "calibrate":
        probe = 200000
        cost = min(sum(run_workers(probe)) for _ in range(3)) / (WORKERS * probe)
        total = float(os.environ.get("BENCH_TOTAL_S", "2"))
        write({"iterations": max(probe, round(total / WORKERS / cost)), "iteration_s": cost})
        return
    worker_s = sum(run_workers(int(os.environ["BENCH_ITERATIONS"])))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    process_s = usage.ru_utime + usage.ru_stime
    write({"worker_s": worker_s, "process_s": process_s, "worker_share": worker_s / process_s})


if __name__ == "__main__":
    main()
