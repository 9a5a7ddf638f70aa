"""Does CPU work, then replaces itself (os.execv) with the same interpreter running
exec_target.py, which does more work and prints its arguments."""

import os
import sys


def before_exec():
    total = 0
    for i in range(1_200_000):
        total = (total + i * i) % 1_000_003  # exec:before
    return total


before_exec()
sys.stdout.flush()
here = os.path.dirname(os.path.abspath(__file__))
os.execv(sys.executable, [sys.executable, os.path.join(here, "exec_target.py"), "one", "two"])
