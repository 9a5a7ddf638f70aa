"""Does some work, then SIGTERM to itself: death by SIGTERM (exit status -15 as subprocess
reports it); nothing after the kill runs, and output still in stdout's buffer (stdout is a
pipe, so block-buffered) is lost."""

import os
import signal
import time


def work():
    total = 0
    for i in range(1_000_000):
        total = (total + i * i) % 1_000_003  # exit:work
    return total


print("before", work(), flush=True)
print("lost: still in the buffer at SIGTERM")
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(5)
print("after: not reached", flush=True)
