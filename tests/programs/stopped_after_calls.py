"""A program that calls callables made for one call each, while another process stops and
continues it (as job control's Ctrl-Z and fg do, or a debugger). Stopped, its thread is off
its CPU without blocking or queueing, so the collector reads its stack with the GIL, and
it finds the thread waiting for the GIL at the check after a call: the frame is still at
the call, whose callee has just been freed. Each callee is 160 KB, so that with a fixed
mmap threshold the C library unmaps it as it is freed. Prints how many calls it made."""

import json
import os
import signal
import subprocess
import sys
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0

STOPPER = """
import os, signal, sys, time
pid = int(sys.argv[1])
while True:
    time.sleep(0.03)
    try:
        os.kill(pid, signal.SIGSTOP)
        time.sleep(0.02)
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        break
"""


class Callee(tuple):
    def __call__(self):
        return 1


ITEMS = tuple(range(20_000))
NO_ARGS = ()

stopper = subprocess.Popen([sys.executable, "-c", STOPPER, str(os.getpid())])
calls = 0
end = time.perf_counter() + SECONDS
try:
    while time.perf_counter() < end:
        calls += Callee(ITEMS)(*NO_ARGS)  # stopped:call
finally:
    stopper.kill()
    stopper.wait()
    os.kill(os.getpid(), signal.SIGCONT)  # in case the stopper was killed between the two
print(json.dumps({"calls": calls}))
