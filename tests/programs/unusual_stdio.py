"""Does away with its standard output or error, then works and leaves normally.

usage: unusual_stdio.py CASE [FILE]
  close_fd1           prints (buffered), closes file descriptor 1, works, prints again:
                      flushing stdout at exit fails, as plain python reports (status 120)
  redirect            sys.stdout and sys.stderr replaced by FILE (left open); prints to both
  redirect_closed     the same, then FILE is closed with sys.stdout/sys.stderr still on it
"""

import os
import sys


def work():
    n = 0
    for i in range(2_500_000):  # about 0.1 s: samples to spare on a fast machine
        n = (n + i * 11) % 1_000_003  # stdio:work
    return n


def main():
    case = sys.argv[1]
    if case == "close_fd1":
        print("before closing fd 1")
        os.close(1)
        print(f"after closing fd 1: {work()}")
        return
    out = open(sys.argv[2], "w")  # noqa: SIM115  stays open: it is the program's stdout now
    sys.stdout = out
    sys.stderr = out
    print("to the file through sys.stdout")
    print(f"work: {work()}", file=sys.stderr)
    if case == "redirect_closed":
        out.close()


if __name__ == "__main__":
    main()
