"""A program that calls callables made for one call each: each callee is freed by the call
that ran it while its value-stack slot still points to it (and, on 3.11 and 3.12, after
CALL_FUNCTION_EX). Each is 160 KB, so that with a fixed mmap threshold the C library
unmaps it as it is freed: a read of it after that faults.

Options, after the number of seconds to run:
- `--stopper`: another process stops and continues this one (as a debugger or a tracer
  does). Stopped, its thread is off its CPU without blocking or queueing, so the collector
  reads its stack with the GIL, and finds the thread waiting for the GIL at the check
  after a call: the frame still stands on the call, whose callee is gone.
- `--faulthandler`: faulthandler's SIGSEGV handler goes in before spyglass's (pytest does
  this), so a fault in spyglass's reads would end the program there.
Prints how many calls it made."""

import json
import os
import subprocess
import sys
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0

# It leaves when its stdin closes, which it notices only with the program running: the
# program is never left stopped.
STOPPER = """
import os, select, signal, sys, time
pid = int(sys.argv[1])
while not select.select([sys.stdin], [], [], 0.03)[0]:
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

if "--faulthandler" in sys.argv:
    import faulthandler

    faulthandler.enable()
stopper = None
if "--stopper" in sys.argv:
    stopper = subprocess.Popen(
        [sys.executable, "-c", STOPPER, str(os.getpid())], stdin=subprocess.PIPE
    )
calls = 0
end = time.perf_counter() + SECONDS
try:
    while time.perf_counter() < end:
        calls += Callee(ITEMS)(*NO_ARGS)  # stopped:star-call
        calls += Callee(ITEMS)()  # stopped:plain-call
finally:
    if stopper is not None:
        stopper.stdin.close()
        stopper.wait()
print(json.dumps({"calls": calls}))
