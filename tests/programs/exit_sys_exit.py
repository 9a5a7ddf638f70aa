"""Does some work, then sys.exit(3): exit status 3."""

import sys


def work():
    total = 0
    for i in range(1_000_000):
        total = (total + i * i) % 1_000_003  # exit:work
    return total


print("before", work())
sys.exit(3)
print("after: not reached")
