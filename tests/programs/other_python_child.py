"""The work of a child run by another Python version than the profiler's."""

import sys


def crunch():
    total = 0
    for i in range(8_000_000):
        total = (total + i * i) % 1_000_003  # other:hot
    return total


print("child", sys.version_info[:2], crunch())
