"""Does CPU work, then replaces itself (os.execv) with another interpreter (argv[1])
running argv[2]."""

import os
import sys


def before_exec():
    total = 0
    for i in range(1_500_000):
        total = (total + i * i) % 1_000_003  # execother:before
    return total


before_exec()
sys.stdout.flush()
os.execv(sys.argv[1], [sys.argv[1], sys.argv[2]])
