"""A service for `spyglass attach` to find running: plain python, started without spyglass.

The main thread spins on one known line; a thread answers the test on stdin/stdout
("ping" -> "pong N", N the spins so far; "quit" ends the service with status 3); SIGUSR1
prints "usr1" from the program's own handler. Nothing else is printed."""

import os
import signal
import sys
import threading

state = {"quit": False, "spins": 0}


def allow_tracing_by_any_process() -> None:
    # Under kernel.yama.ptrace_scope 1 only a process's ancestors may trace it; the test's
    # spyglass is its sibling. A service that wants to be attached to says so (or the
    # attaching user is root).
    if os.path.exists("/proc/sys/kernel/yama/ptrace_scope"):
        import ctypes

        pr_set_ptracer, any_process = 0x59616D61, -1
        ctypes.CDLL(None).prctl(pr_set_ptracer, ctypes.c_ulong(any_process & (2**64 - 1)), 0, 0, 0)


def on_usr1(signum, frame):
    print("usr1", flush=True)


def answer():
    for line in sys.stdin:
        if line.strip() == "ping":
            print(f"pong {state['spins']}", flush=True)
        elif line.strip() == "quit":
            state["quit"] = True
            return


def spin():
    total = 0
    for i in range(5000):
        total += i * i  # the hot line
    return total


allow_tracing_by_any_process()
signal.signal(signal.SIGUSR1, on_usr1)
threading.Thread(target=answer, name="answerer", daemon=True).start()
print("ready", flush=True)
while not state["quit"]:
    spin()
    state["spins"] += 1
print("bye", flush=True)
sys.exit(3)
