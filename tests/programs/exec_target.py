"""What execs_python.py becomes."""

import sys


def after_exec():
    total = 0
    for i in range(1_200_000):
        total = (total + i * i) % 1_000_003  # exec:after
    return total


after_exec()
print("after exec", sys.argv[1:])
sys.exit(3)
