"""Calls into an installed library (poolib, from tests/programs/libs) whose own thread makes
the call's result as soon as the call hands it the work, and computes a little after:
pandas's read_csv allocates its parser's buffers so on its pool threads. Prints, as JSON on
stdout, the MiB the calls' results keep."""

import json
import sys
import time

import poolib

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
KEPT = []  # what the calls made, kept to the end


def main():
    for _ in range(CALLS):
        KEPT.append(poolib.fill(32, 0.02))  # pool:fill
        time.sleep(0.03)
    print(json.dumps({"kept_mb": sum(len(block) for block in KEPT) / (1 << 20)}))


if __name__ == "__main__":
    main()
