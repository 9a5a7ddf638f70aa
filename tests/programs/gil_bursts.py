"""A worker thread alternates about 2 ms of Python (holding the GIL) with about 2.5 ms of
zlib.compress (the GIL released), while another thread spins in Python: the worker gets
the CPU back in bursts that start at the scheduler's tick. Prints JSON: the CPU each part
took, as the worker's own thread clock measured it."""

import json
import os
import threading
import time
import zlib

spent = {"transform": 0.0, "compress": 0.0}
stop = False


def transform(item):
    total = 0.0
    for x in item:
        total += x * 0.5  # bursts:python
    return total


def worker():
    blob = os.urandom(64 * 1024) * 2
    item = [float(i) for i in range(100_000)]
    for _ in range(250):
        t0 = time.thread_time()
        transform(item)
        t1 = time.thread_time()
        zlib.compress(blob, 6)  # bursts:compress
        t2 = time.thread_time()
        spent["transform"] += t1 - t0
        spent["compress"] += t2 - t1


def spin():
    n = 0
    while not stop:
        n += 1  # bursts:spin


spinner = threading.Thread(target=spin)
work = threading.Thread(target=worker)
spinner.start()
work.start()
work.join()
stop = True
spinner.join()
print(json.dumps(spent))
