"""Pure arithmetic first (copies nothing), then N copies of a 32 MiB buffer on one line.

usage: mem_copy.py N"""

import sys

COPIES = int(sys.argv[1])
buf = bytearray(32 << 20)


def arith():
    total = 0
    for i in range(1_500_000):
        total = (total * 31 + i) % 1_000_003  # mem:arith
    return total


def copies():
    size = 0
    for _ in range(COPIES):
        out = bytes(buf)  # mem:copy
        size += len(out)
    return size


print(arith(), copies())
