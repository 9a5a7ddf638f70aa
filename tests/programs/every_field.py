"""Exercises every figure a profile can hold: CPU on two threads, allocations that stay
live (a leak's shape), copies, and, with an argument "children", a forked child and a
Python subprocess."""

import os
import subprocess
import sys
import threading

kept = []


def work(rounds):
    total = 0
    for i in range(rounds):
        total += i * i
        if i % 2000 == 0:
            block = bytearray(200_000)  # allocated and copied: memory and copy samples
            kept.append(bytes(block))
    return total


worker = threading.Thread(target=work, args=(400_000,), name="worker")
worker.start()
work(400_000)
worker.join()

if sys.argv[1:] == ["children"]:
    pid = os.fork()
    if pid == 0:
        work(200_000)
        os._exit(0)
    os.waitpid(pid, 0)
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(300_000))"], check=True)
