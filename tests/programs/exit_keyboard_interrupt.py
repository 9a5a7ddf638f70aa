"""Does some work, then SIGINT to itself: KeyboardInterrupt, which Python turns into death by
SIGINT (exit status -2 as subprocess reports it)."""

import os
import signal
import time


def work():
    total = 0
    for i in range(1_000_000):
        total = (total + i * i) % 1_000_003  # exit:work
    return total


def interrupt_myself():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)  # not reached: KeyboardInterrupt is raised first


# A process started in the background by a shell inherits SIGINT ignored, and Python then
# sets up no KeyboardInterrupt; this program is about Ctrl-C, so it asks for what Python does
# when started from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

print("before", work())
interrupt_myself()
print("after: not reached")
