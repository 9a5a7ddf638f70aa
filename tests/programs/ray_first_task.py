"""What spyglass's gate before a Ray worker's first call sees, in real Ray workers.

    ray_first_task.py OUT_DIR

A Ray worker must not call an actor before it has begun its first task (Ray aborts it).
Each worker's setup hook records `task_started()` as the hook runs, when the process has
begun no task, and a thread of its own records when `wait_for_first_task()` returns; a
task and an actor's methods record `task_started()` as they run. Each record is a file
PID-EVENT.json in OUT_DIR holding [value, time.time()].
"""

import json
import os
import sys
import threading
import time

import ray

OUT = sys.argv[1]


def record(event, value):
    with open(os.path.join(OUT, f"{os.getpid()}-{event}.json"), "w") as f:
        json.dump([value, time.time()], f)


def setup():
    from spyglass.cluster.ray_hook import task_started, wait_for_first_task

    record("hook", task_started())

    def waiter():
        wait_for_first_task()
        record("waited", True)

    threading.Thread(target=waiter, daemon=True).start()


@ray.remote
def task():
    from spyglass.cluster.ray_hook import task_started

    record("task", task_started())
    time.sleep(0.5)
    return os.getpid()


@ray.remote(num_cpus=0)
class Actor:
    def __init__(self):
        record("init", True)

    def method(self):
        from spyglass.cluster.ray_hook import task_started

        record("method", task_started())
        time.sleep(0.5)
        return os.getpid()


def main():
    ray.init(num_cpus=2, include_dashboard=False, runtime_env={"worker_process_setup_hook": setup})
    try:
        pids = ray.get([task.remote() for _ in range(2)])
        actor = Actor.remote()
        pids.append(ray.get(actor.method.remote()))
        time.sleep(0.5)  # the waiters poll every 50 ms
    finally:
        ray.shutdown()
    with open(os.path.join(OUT, "pids.json"), "w") as f:
        json.dump(pids, f)


if __name__ == "__main__":
    main()
