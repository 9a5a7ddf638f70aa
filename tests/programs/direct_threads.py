"""Threads started with _thread.start_new_thread, not threading.Thread, as some libraries'
pools and servers start them: 120 of about 2 ms (light) and 6 ms (heavy) of CPU, two at a
time. Prints, as JSON on stdout, each function's CPU as its threads measured it
(time.thread_time() from the function's first line), and "threads", their sum. Then a
thread whose function raises: _thread reports it as Python does."""

import _thread
import json
import sys
import time

lock = _thread.allocate_lock()
cpu = {"light": 0.0, "heavy": 0.0}
finished = [0]


def spin(seconds):
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        n += sum(i * i for i in range(50))
    return n


def measured(key, seconds):
    t = time.thread_time()
    spin(seconds)
    with lock:
        cpu[key] += time.thread_time() - t
        finished[0] += 1


def light(seconds):
    measured("light", seconds)


def heavy(seconds):
    measured("heavy", seconds)


def raises():
    raise ValueError("raised in a thread of its own")


for pair in range(1, 61):
    _thread.start_new_thread(light, (0.002,))
    _thread.start_new_thread(heavy, (0.006,), {})
    while finished[0] < 2 * pair:
        time.sleep(0.0005)
_thread.start_new_thread(raises, ())
time.sleep(0.3)
cpu["threads"] = cpu["light"] + cpu["heavy"]
json.dump(cpu, sys.stdout)
