"""Does some work, then leaves with daemon threads still running: one of threading's that
spins, wanting the GIL, and one started with _thread.start_new_thread. The interpreter ends
them as it exits (pthread_exit inside the interpreter); plain python exits 0."""

import _thread
import threading
import time


def spin(*args, **kwargs):
    while True:
        sum(range(1000))


def work():
    total = 0
    for i in range(1_000_000):
        total = (total + i * i) % 1_000_003  # exit:work
    return total


threading.Thread(target=spin, daemon=True).start()
_thread.start_new_thread(spin, ())
_thread.start_new_thread(spin, (1,), {"k": 2})  # a tuple and a dict of the thread's own
print("before", work())
time.sleep(0.05)
