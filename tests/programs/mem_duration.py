"""The same steady loop of allocation, churn and arithmetic for SECONDS seconds (wall clock):
its profile must not grow with the run time.

usage: mem_duration.py SECONDS"""

import sys
import time

deadline = time.monotonic() + float(sys.argv[1])
kept = []
rounds = 0
while time.monotonic() < deadline:
    tmp = bytearray(4 << 20)  # mem:duration-churn
    del tmp
    small = [i * 2 for i in range(5000)]  # mem:duration-small
    total = sum(small)  # mem:duration-sum
    if len(kept) < 64:
        kept.append(bytearray(1 << 20))  # mem:duration-keep
    rounds += 1
print(rounds > 0)
