"""Two worker threads burn Python CPU while the main thread only waits for them in join().

The workers' lines must get the CPU; the join line must get none, only wait. Prints, as JSON,
the wall time the main thread spent in join() and the workers' results.
"""

import json
import threading
import time

results = {}


def work(name, n):
    total = 0
    for i in range(n):
        total = (total + i * i) % 999_983  # worker:hot
    results[name] = total


def main():
    threads = []
    for k in range(2):
        name = f"worker-{k}"
        threads.append(threading.Thread(target=work, args=(name, 3_000_000), name=name))
    for t in threads:
        t.start()
    started = time.perf_counter()
    for t in threads:
        t.join()  # main:join
    joined = time.perf_counter() - started
    print(json.dumps({"join_s": joined, "results": results}, sort_keys=True))


if __name__ == "__main__":
    main()
