"""Short threads that all run one target, whose work changes half-way through the run (as
a server's traffic moves from one endpoint to another): 300 threads run job_a, then 300
run job_b. Prints, as JSON on stdout, the CPU each job measured of itself."""

import json
import threading
import time

lock = threading.Lock()
spent = {"job_a": 0.0, "job_b": 0.0}


def job_a():
    x = 0
    for i in range(60_000):
        x += i
    return x


def job_b():
    x = 0
    for i in range(60_000):
        x ^= i
    return x


def run(job):  # the one target every thread shares
    t0 = time.thread_time()
    job()
    with lock:
        spent[job.__name__] += time.thread_time() - t0


for job in [job_a] * 300 + [job_b] * 300:
    thread = threading.Thread(target=run, args=(job,))
    thread.start()
    thread.join()
print(json.dumps(spent))
