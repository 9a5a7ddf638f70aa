"""A graceful shutdown on SIGTERM that calls on the handler it found if it is callable (as
frameworks do), and otherwise exits with the status the default would have given (143)
when asked to ("exit" argument). It sends itself the SIGTERM and prints what it found."""

import os
import signal
import sys
import time

stop = False
exit_if_default = sys.argv[1:] == ["exit"]


def on_term(signum, frame):
    global stop
    stop = True
    if callable(previous):  # let whoever was there before see it too
        previous(signum, frame)
    elif exit_if_default:
        sys.exit(128 + signum)


print("found", repr(signal.getsignal(signal.SIGTERM)), flush=True)
previous = signal.signal(signal.SIGTERM, on_term)
os.kill(os.getpid(), signal.SIGTERM)
while not stop:
    time.sleep(0.01)
print("clean exit", flush=True)
