"""A pure-Python hot loop: the loop body must be reported as Python time.

usage: pure_python_loop.py [ITERATIONS]
"""

import sys


def checksum(n):
    total = 0
    for i in range(n):
        total = (total * 31 + i * i) % 1_000_003  # hot:python
    return total


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000
    print(checksum(n))


if __name__ == "__main__":
    main()
