"""Does some work, then SIGTERM comes just before the main thread blocks (in C: raised, then
a wait on a lock no one releases, as a multiprocessing pool's worker waits for its next
task; or, with `spin`, a busy loop holding the GIL for SECONDS). Plain python dies of it at
once; so must the program under spyglass, which handles SIGTERM in Python to write the
profile first.

usage: sigterm_before_a_wait.py [wait | spin SECONDS]
"""

import signal
import sys

import spin_ext


def work():
    total = 0
    for i in range(1_000_000):
        total = (total + i * i) % 1_000_003  # sigterm:work
    return total


print("before", work(), flush=True)
if sys.argv[1:2] == ["spin"]:
    spin_ext.signal_then_wait(signal.SIGTERM, float(sys.argv[2]))
else:
    spin_ext.signal_then_wait(signal.SIGTERM)
print("after: not reached", flush=True)
