"""Does its work in 200 threads of ~4 ms of CPU each, shorter than one sampling interval,
and prints the CPU they used as each thread measured it (the ground truth)."""

import threading
import time

used = []


def short_work():
    t = time.thread_time()
    while time.thread_time() - t < 0.004:
        sum(range(200))  # short:hot
    used.append(time.thread_time())


def main():
    for _ in range(50):
        threads = [threading.Thread(target=short_work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


main()
print(f"threads used {sum(used):.6f}")
