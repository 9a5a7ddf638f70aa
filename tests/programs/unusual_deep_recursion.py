"""Deep recursion: 3000 Python frames (recursion limit raised to 5000), with all the CPU at
the bottom. The profiler keeps the innermost 96 and the outermost 32 frames of each stack.

Prints the depth reached and the result.
usage: unusual_deep_recursion.py [DEPTH]
"""

import sys

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 3000


def descend(level):
    if level == 0:
        return bottom()
    return descend(level - 1) + 1  # recursion:descend


def bottom():
    n = 0
    for i in range(2_500_000):
        n = (n + i * i) % 1_000_003  # recursion:bottom
    return n


def main():
    sys.setrecursionlimit(5000)
    result = descend(DEPTH)
    print(f"depth {DEPTH}: result {result}")


if __name__ == "__main__":
    main()
