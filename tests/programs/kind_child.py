"""A Python child of starts_children.py, whichever way it was started (a script, -m, -c
source, a fork, a multiprocessing Process): its work runs in a thread named "cruncher",
which measures its own CPU time; it prints {"pid", "hot_cpu_s"} and leaves with the status
given as argv[1] (or to main())."""

import json
import os
import sys
import threading
import time


def crunch(n):
    total = 0
    for i in range(n):
        total = (total + i * i) % 1_000_003  # kind:hot
    return total


def main(status):
    measured = {}

    def work():
        start = time.thread_time()
        crunch(4_000_000)
        measured["hot_cpu_s"] = time.thread_time() - start

    worker = threading.Thread(target=work, name="cruncher")
    worker.start()
    worker.join()
    print(json.dumps({"pid": os.getpid(), **measured}), flush=True)
    sys.exit(status)


if __name__ == "__main__":
    main(int(sys.argv[1]))
