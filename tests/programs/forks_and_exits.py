"""os.fork: the child does CPU work and leaves with os._exit(5); the parent waits and
reports the child's status."""

import os


def child_work():
    total = 0
    for i in range(3_000_000):
        total = (total + i * i) % 1_000_003  # fork:hot
    return total


pid = os.fork()
if pid == 0:
    child_work()
    os._exit(5)
_, status = os.waitpid(pid, 0)
print("child exit", os.waitstatus_to_exitcode(status))
