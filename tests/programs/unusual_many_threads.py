"""200 threads, each computing in Python for a few milliseconds of its own CPU time.

The threads all start, then wait for a common go so that they really run at the same time,
compute until their own CPU clock says CPU_EACH_S, and end. Prints how many finished, then a
JSON object with the sum of the threads' own CPU times.
usage: unusual_many_threads.py [THREADS] [CPU_EACH_S]
"""

import json
import sys
import threading
import time

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
CPU_EACH_S = float(sys.argv[2]) if len(sys.argv) > 2 else 0.004


def work(go, cpu_used, index):
    go.wait()
    start = time.thread_time()
    n = index
    while time.thread_time() - start < CPU_EACH_S:
        for i in range(200):
            n = (n * 17 + i) % 1_000_003  # threads:hot
    cpu_used[index] = time.thread_time() - start


def main():
    go = threading.Event()
    cpu_used = [0.0] * THREADS
    threads = [
        threading.Thread(target=work, args=(go, cpu_used, i), name=f"t{i:03d}")
        for i in range(THREADS)
    ]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join()
    done = sum(1 for used in cpu_used if used >= CPU_EACH_S)
    print(f"{done} of {THREADS} threads finished their work")
    print(json.dumps({"threads_cpu_s": sum(cpu_used)}))


if __name__ == "__main__":
    main()
