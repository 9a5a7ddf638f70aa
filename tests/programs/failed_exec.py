"""Works, tries to exec a program that does not exist (as os.execvp does for each
directory of PATH before the one that has it) and one that cannot be run (an executable
file that is no program: the exec itself fails), and goes on working: every part is the
program's."""

import os
import tempfile
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
with tempfile.TemporaryDirectory() as tmp:
    not_a_program = os.path.join(tmp, "not-a-program")
    with open(not_a_program, "wb") as f:
        f.write(b"\x00\x01 no interpreter line, no ELF header\n")
    os.chmod(not_a_program, 0o755)
    try:
        os.execv(not_a_program, [not_a_program])
    except OSError as e:
        print("exec failed:", e.strerror)
after()
