"""A Dask job profiled with spyglass.dask.profile, measuring its own truth.

    dask_job.py local OUT TRUTH [--kill]              a LocalCluster of 2 worker processes
    dask_job.py SCHEDULER_FILE OUT TRUTH [--workers N]  those of a `dask scheduler` process

Two task types, pinned so that each worker runs both: `burn` (CPU in Python) and `alloc`
(bytearrays), each returning its worker's pid, the thread CPU time it took and the bytes it
allocated. With --kill, one worker is SIGKILLed after its tasks and a snapshot interval;
its nanny starts a new worker during the block, which then runs tasks of its own. TRUTH
gets every task's result and the pids of the workers that can import spyglass at the start
(by address).
"""

import argparse
import json
import os
import signal
import time

from distributed import Client, LocalCluster

import spyglass.dask

BLOCK = 100_000
BURN_N = 3_000_000
ALLOC_N = 1_500
SNAPSHOT_S = 0.5


def burn(n):
    start = time.thread_time()
    x = 0
    for i in range(n):
        x += i * i  # task:burn
    return {"task": "burn", "pid": os.getpid(), "cpu_s": time.thread_time() - start, "bytes": 0}


def alloc(n):
    start = time.thread_time()
    blocks = [bytearray(BLOCK) for _ in range(n)]  # task:alloc
    size = len(blocks) * BLOCK
    return {"task": "alloc", "pid": os.getpid(), "cpu_s": time.thread_time() - start, "bytes": size}


def run_on(client, workers, rounds):
    futures = []
    for worker in workers:
        for _ in range(rounds):
            futures.append(client.submit(burn, BURN_N, workers=[worker], pure=False))
            futures.append(client.submit(alloc, ALLOC_N, workers=[worker], pure=False))
    return client.gather(futures)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("where")
    parser.add_argument("out")
    parser.add_argument("truth")
    parser.add_argument("--kill", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    where, kill = args.where, args.kill
    if where == "local":
        cluster = LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
        )
        client = Client(cluster)
    else:
        client = Client(scheduler_file=where)
    client.wait_for_workers(args.workers)
    pids = client.run(os.getpid)
    workers = sorted(pids)
    profiled = [w for w in workers if client.run(_has_spyglass, workers=[w])[w]]
    pids = {w: pids[w] for w in profiled}
    with spyglass.dask.profile(client, outfile=args.out, snapshot_every=SNAPSHOT_S) as job:
        results = run_on(client, profiled, 2)
        if kill:
            victim = profiled[-1]
            # Its work is in a snapshot the client has: the worker's first can take more
            # than a few intervals to reach the client on a loaded machine (the test then
            # found no trace of the worker), so wait for one, then for the intervals.
            deadline = time.monotonic() + 60
            while victim not in job.outcomes.snapshots and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(4 * SNAPSHOT_S)
            os.kill(pids[victim], signal.SIGKILL)
            deadline = time.monotonic() + 60
            while victim in client.scheduler_info()["workers"] and time.monotonic() < deadline:
                time.sleep(0.1)
            client.wait_for_workers(2)  # the nanny's new worker joins during the block
            joined = [w for w in client.scheduler_info()["workers"] if w not in pids]
            results += run_on(client, joined, 1)
    with open(args.truth, "w") as f:
        json.dump({"results": results, "pids": pids}, f)
    client.close()
    if where == "local":
        cluster.close()


def _has_spyglass():
    try:
        import spyglass._native  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
