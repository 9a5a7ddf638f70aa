"""Works, tries to exec a program that does not exist (as os.execvp does for each
directory of PATH before the one that has it), and goes on working: both parts are the
program's."""

import os
import time


def before():
    n = 0
    end = time.process_time() + 0.3
    while time.process_time() < end:
        for _ in range(1000):
            n += 1  # exec:before
    return n


def after():
    n = 0
    end = time.process_time() + 0.3
    while time.process_time() < end:
        for _ in range(1000):
            n += 1  # exec:after
    return n


before()
try:
    os.execv("/nonexistent/spyglass-test-program", ["nothing"])
except OSError as e:
    print("exec failed:", e.strerror)
after()
