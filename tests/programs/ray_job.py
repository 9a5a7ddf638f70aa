"""A Ray job profiled with spyglass.ray.profile, measuring its own truth.

    ray_job.py OUT TRUTH [--kill] [--blocked DIR]

Two task types, each both as a task and as a method of two actors: `burn` (CPU in Python)
and `alloc` (bytearrays), each returning the pid of its process, the thread CPU time it
took and the bytes it allocated. A third actor does some work and is then told to end,
before the job does. With --kill, the second actor is SIGKILLed after its work
and a few snapshot intervals. With --blocked, a third actor runs with PYTHONPATH=DIR, whose
sitecustomize makes `spyglass` unimportable (another environment). TRUTH gets every result,
the two actors' pids and the retired one's.
"""

import argparse
import json
import os
import signal
import time

import ray

import spyglass.ray

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


@ray.remote(num_cpus=0)
class Worker:
    def pid(self):
        return os.getpid()

    def burn(self, n):
        return burn(n)

    def alloc(self, n):
        return alloc(n)


burn_task = ray.remote(burn)
alloc_task = ray.remote(alloc)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("truth")
    parser.add_argument("--kill", action="store_true")
    parser.add_argument("--blocked")
    args = parser.parse_args()
    with spyglass.ray.profile(
        outfile=args.out, snapshot_every=SNAPSHOT_S, num_cpus=2, include_dashboard=False
    ):
        actors = [Worker.remote() for _ in range(2)]
        pids = ray.get([a.pid.remote() for a in actors])
        results = []
        for _ in range(2):
            for actor in actors:
                results += ray.get([actor.burn.remote(BURN_N), actor.alloc.remote(ALLOC_N)])
            results += ray.get([burn_task.remote(BURN_N), alloc_task.remote(ALLOC_N)])
        # An actor that ends before the job does: its process leaves, sending its profile.
        retiring = Worker.remote()
        results.append(ray.get(retiring.burn.remote(BURN_N)))
        retired = results[-1]["pid"]
        time.sleep(4 * SNAPSHOT_S)  # its work is in a snapshot the collector has
        retiring.__ray_terminate__.remote()
        deadline = time.monotonic() + 60
        while _alive(retired) and time.monotonic() < deadline:
            time.sleep(0.05)
        if args.blocked:
            env = {"env_vars": {"PYTHONPATH": args.blocked}}
            blocked = Worker.options(runtime_env=env).remote()
            results.append(ray.get(blocked.burn.remote(BURN_N // 10)))
        if args.kill:
            time.sleep(6 * SNAPSHOT_S)  # its work is in a snapshot the collector has
            os.kill(pids[1], signal.SIGKILL)
    with open(args.truth, "w") as f:
        json.dump({"results": results, "actors": pids, "retired": retired}, f)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


if __name__ == "__main__":
    main()
