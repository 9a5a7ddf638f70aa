"""One multiprocessing.Process per task, 24 of them, each doing about 40 ms of CPU in one
function and then exiting; the start method is argv[1]. Prints the tasks' checksum, which
plain python prints too, and on stderr the CPU time work() measured itself in all of them."""

import multiprocessing
import sys
import time


def work(n):
    start = time.thread_time()
    total = 0
    for i in range(n):
        total = (total + i * i) % 1_000_003  # short:hot
    return total, time.thread_time() - start


def task(n, results):
    results.put(work(n))


if __name__ == "__main__":
    ctx = multiprocessing.get_context(sys.argv[1])
    results = ctx.Queue()
    children = [ctx.Process(target=task, args=(650_000, results)) for _ in range(24)]
    for child in children:
        child.start()
    done = [results.get() for _ in children]
    for child in children:
        child.join()
    print(sum(total for total, _ in done))
    print("work cpu", sum(spent for _, spent in done), file=sys.stderr)
