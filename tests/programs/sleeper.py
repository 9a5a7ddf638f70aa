"""Sleeps on one line: that line must show the sleep as wait and (almost) no CPU.

usage: sleeper.py [SECONDS]
"""

import sys
import time


def nap(seconds):
    time.sleep(seconds)  # sleep:here


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
    started = time.perf_counter()
    nap(seconds)
    print(f"slept {time.perf_counter() - started:.3f}")


if __name__ == "__main__":
    main()
