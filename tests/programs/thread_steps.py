"""Threads that each do three steps in the same order, as a request handler does (parse,
work, reply), a few at a time: `first`, `middle` and `last`, each spinning for the CPU
time given in milliseconds, in threads of STEPS ms in all.

    thread_steps.py FIRST MIDDLE LAST THREADS

Prints, as JSON on stdout, the CPU each step took in all, as each thread measured it.
"""

import json
import sys
import threading
import time

FIRST, MIDDLE, LAST = (float(x) / 1000 for x in sys.argv[1:4])
THREADS = int(sys.argv[4])
AT_ONCE = 4
lock = threading.Lock()
cpu = {"first": 0.0, "middle": 0.0, "last": 0.0}


def spin(seconds):
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass
    return time.thread_time() - start


def first():
    return spin(FIRST)


def middle():
    return spin(MIDDLE)


def last():
    return spin(LAST)


def request():
    spent = {"first": first(), "middle": middle(), "last": last()}
    with lock:
        for step, seconds in spent.items():
            cpu[step] += seconds


for _ in range(THREADS // AT_ONCE):
    batch = [threading.Thread(target=request) for _ in range(AT_ONCE)]
    for t in batch:
        t.start()
    for t in batch:
        t.join()
print(json.dumps(cpu))
