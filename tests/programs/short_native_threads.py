"""Threads that run no Python, started by a C extension one after the other while the
calling thread waits for each (as polars' rayon pool or a C library's own threads work
while the caller sleeps on a latch): first called by the main thread, then by a Python
thread while the main thread sleeps. Prints the CPU the native threads measured of
themselves in each part."""

import json
import threading
import time

import spin_ext

COUNT = 12
SECONDS = 0.05

direct = spin_ext.spin_in_threads(COUNT, SECONDS)  # native:direct

from_thread = []


def work():
    from_thread.append(spin_ext.spin_in_threads(COUNT, SECONDS))  # native:from-thread


worker = threading.Thread(target=work)
worker.start()
while worker.is_alive():
    time.sleep(0.05)  # native:sleeping
worker.join()
print(json.dumps({"direct_cpu_s": direct, "from_thread_cpu_s": from_thread[0]}))
