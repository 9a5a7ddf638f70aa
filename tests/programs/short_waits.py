"""Threads of a few milliseconds each, as a thread-per-request server's handlers are, that
wait twice: 3 ms on a "database" and 1 ms on a "cache". Prints, as JSON on stdout, the wall
time each wait took as the threads measured it."""

import json
import sys
import threading
import time

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 600
lock = threading.Lock()
waited = {"db": 0.0, "cache": 0.0}


def handle():
    sum(k * k for k in range(2000))
    t0 = time.perf_counter()
    time.sleep(0.003)  # wait:db
    t1 = time.perf_counter()
    time.sleep(0.001)  # wait:cache
    t2 = time.perf_counter()
    with lock:
        waited["db"] += t1 - t0
        waited["cache"] += t2 - t1


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
