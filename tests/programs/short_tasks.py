"""Short tasks of 1-5 ms of CPU, each in a thread of its own (runner() calls work(), which
does all the work), then the same tasks on a ThreadPoolExecutor. Prints, as JSON on
stdout, the CPU of work() and of all the program's threads as each thread measured it:
from the thread's start, so that starting threads, the pool's machinery and the program's
imports count (all of it CPU a profile shows, about 5% of the whole; the pool's workers
between tasks are idle)."""

import time

MAIN_START = time.thread_time()  # the imports below are the program's CPU too

import json  # noqa: E402
import random  # noqa: E402
import threading  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

TASKS = 300
lock = threading.Lock()
cpu = {"work": 0.0, "threads": 0.0}
# Each thread's CPU from its start to the end of its last task (a pool worker runs many).
# Keyed by the Thread itself, which the dict keeps alive: ids of ended threads are reused.
spent = {}


def add(key, seconds):
    with lock:
        cpu[key] += seconds


def work(seconds):
    t = time.thread_time()
    end = t + seconds
    n = 0
    while time.thread_time() < end:
        n += sum(i * i for i in range(50))  # tasks:hot
    add("work", time.thread_time() - t)
    return n


def runner(seconds):
    work(seconds)
    with lock:
        spent[threading.current_thread()] = time.thread_time()


def main():
    rng = random.Random(7)
    lengths = [rng.uniform(0.001, 0.005) for _ in range(TASKS)]
    for i in range(0, TASKS, 4):
        threads = [threading.Thread(target=runner, args=(s,)) for s in lengths[i : i + 4]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(runner, lengths))
    add("threads", sum(spent.values()) + time.thread_time() - MAIN_START)


main()
print(json.dumps(cpu))
