"""Does some work, then SIGTERM to itself: death by SIGTERM (exit status -15 as subprocess
reports it); nothing after the kill runs."""

import os
import signal
import time


def work():
    total = 0
    for i in range(400_000):
        total = (total + i * i) % 1_000_003  # exit:work
    return total


print("before", work(), flush=True)
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(5)
print("after: not reached", flush=True)
