"""Does some work, then SIGINT to itself: KeyboardInterrupt, which Python turns into death by
SIGINT (exit status -2 as subprocess reports it)."""

import os
import signal
import time


def work():
    total = 0
    for i in range(400_000):
        total = (total + i * i) % 1_000_003  # exit:work
    return total


def interrupt_myself():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)  # not reached: KeyboardInterrupt is raised first


print("before", work())
interrupt_myself()
print("after: not reached")
