"""A concurrent.futures.ProcessPoolExecutor of 2 workers does all the CPU work in one
function; the start method is argv[1]. Prints the result, which plain python prints too."""

import concurrent.futures
import multiprocessing
import sys


def crunch(n):
    total = 0
    for i in range(n):
        total = (total + i * i) % 1_000_003  # executor:hot
    return total


if __name__ == "__main__":
    ctx = multiprocessing.get_context(sys.argv[1])
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as executor:
        print(sum(executor.map(crunch, [4_000_000] * 4)))
