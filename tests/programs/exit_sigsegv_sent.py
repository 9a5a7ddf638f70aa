"""Sends itself SIGSEGV, as a supervisor or a crashing C library might: death by SIGSEGV
(exit status -11 as subprocess reports it). spyglass's own SIGSEGV handler, there for its
guarded memory reads, must not swallow a signal that was sent rather than a fault."""

import os
import signal
import time

print("before", flush=True)
os.kill(os.getpid(), signal.SIGSEGV)
time.sleep(5)
print("after: not reached", flush=True)
