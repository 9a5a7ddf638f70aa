"""Allocates 32 MiB and does some work, then ends the way MODE says: normal, sys_exit (3),
exception (1), os_exit (4), sigint (death by SIGINT), sigterm (death by SIGTERM), or fork
(a forked child allocates and leaves with os._exit(5); the parent exits 0).

usage: mem_exits.py MODE"""

import os
import signal
import sys
import time


def work():
    keep = bytearray(32 << 20)  # exit:alloc
    total = 0
    for i in range(300_000):
        total = (total + i * i) % 1_000_003  # exit:work
    return keep, total


MODE = sys.argv[1]
# A shell's background job inherits SIGINT ignored; this program is about Ctrl-C.
if MODE == "sigint" and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

if MODE == "fork":
    pid = os.fork()
    if pid == 0:
        work()
        os._exit(5)
    _, status = os.waitpid(pid, 0)
    print("child exit", os.waitstatus_to_exitcode(status))
    sys.exit(0)

kept, result = work()
print("before", result)
if MODE == "sys_exit":
    sys.exit(3)
elif MODE == "exception":
    raise RuntimeError("the end")
elif MODE == "os_exit":
    os._exit(4)
elif MODE in ("sigint", "sigterm"):
    os.kill(os.getpid(), signal.SIGINT if MODE == "sigint" else signal.SIGTERM)
    time.sleep(5)  # not reached
elif MODE != "normal":
    raise SystemExit(f"unknown mode {MODE}")
