"""A concurrent.futures.ProcessPoolExecutor of 2 workers does all the CPU work in one
function; the start method is argv[1]. Prints the result, which plain python prints too,
and on stderr the CPU time crunch() measured itself."""

import concurrent.futures
import multiprocessing
import sys
import time


def crunch(n):
    start = time.thread_time()
    total = 0
    for i in range(n):
        total = (total + i * i) % 1_000_003  # executor:hot
    return total, time.thread_time() - start


if __name__ == "__main__":
    ctx = multiprocessing.get_context(sys.argv[1])
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as executor:
        results = list(executor.map(crunch, [4_000_000] * 4))
    print(sum(total for total, _ in results))
    # The CPU crunch() used, as its threads measured it: the truth a profile is held to.
    print("crunch cpu", sum(spent for _, spent in results), file=sys.stderr)
