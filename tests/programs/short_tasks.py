"""Short tasks of 1-5 ms of CPU, each in a thread of its own (runner() calls work(), which
does all the work), then the same tasks on a ThreadPoolExecutor. Prints, as JSON on
stdout, the CPU of work() and of all the program's threads as each thread measured it
(the pool's workers between tasks are idle)."""

import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

TASKS = 300
lock = threading.Lock()
cpu = {"work": 0.0, "threads": 0.0}


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
    t = time.thread_time()
    work(seconds)
    add("threads", time.thread_time() - t)


def main():
    main_start = time.thread_time()
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
    add("threads", time.thread_time() - main_start)


main()
print(json.dumps(cpu))
