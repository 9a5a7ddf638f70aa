#!/usr/bin/env python3
"""The wall time spyglass.ray.profile adds to a Ray job, measured interleaved.

    python bench/ray_overhead.py --reps 5

The same job (a CPU-heavy and an allocation-heavy task type, as tests/programs/ray_job.py,
as tasks and as methods of two actors) runs alternately in a plain Ray session
(`ray.init`, the job, `ray.shutdown`) and in `spyglass.ray.profile` (memory profiled,
snapshots every 5 s), which is such a session with every worker profiled. Printed: each
pair's wall times, and the median ratios of the job alone and of the whole session (start,
job, the workers' profiles collected and merged, shutdown). Ratios, never absolute times:
the machine's load moves both runs of a pair alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "programs"))

import ray
from ray_job import Worker, alloc_task, burn_task

import spyglass.ray

PROGRAMS = str(Path(__file__).resolve().parent.parent / "tests" / "programs")
# The workers import the job's module by name, as a package's would be.
SESSION = {
    "num_cpus": 2,
    "include_dashboard": False,
    "log_to_driver": False,
    "runtime_env": {"env_vars": {"PYTHONPATH": PROGRAMS}},
}


def job(tasks: int) -> float:
    """The job's wall time: actors started, then `tasks` of each type as tasks and on each
    actor."""
    t0 = time.perf_counter()
    actors = [Worker.remote() for _ in range(2)]
    refs = [burn_task.remote(2_000_000) for _ in range(tasks)]
    refs += [alloc_task.remote(1_000) for _ in range(tasks)]
    for actor in actors:
        refs += [actor.burn.remote(2_000_000) for _ in range(tasks // 2)]
        refs += [actor.alloc.remote(1_000) for _ in range(tasks // 2)]
    ray.get(refs)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=8, help="tasks of each type per run")
    parser.add_argument("--cpu-only", action="store_true", help="profile without memory")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp()) / "job.json"
    plain, profiled, plain_whole, profiled_whole = [], [], [], []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        ray.init(**SESSION)
        plain.append(job(args.tasks))
        ray.shutdown()
        plain_whole.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with spyglass.ray.profile(
            outfile=out, program_path=PROGRAMS, memory=not args.cpu_only, **SESSION
        ):
            profiled.append(job(args.tasks))
        profiled_whole.append(time.perf_counter() - t0)
        print(
            f"job: plain {plain[-1]:.3f} s, profiled {profiled[-1]:.3f} s; session: plain "
            f"{plain_whole[-1]:.3f} s, profiled {profiled_whole[-1]:.3f} s",
            flush=True,
        )
    result = {
        "load_average": os.getloadavg(),
        "plain_job_s": plain,
        "profiled_job_s": profiled,
        "plain_session_s": plain_whole,
        "profiled_session_s": profiled_whole,
        "median_ratio_job": statistics.median(b / a for a, b in zip(plain, profiled)),
        "median_ratio_session": statistics.median(
            b / a for a, b in zip(plain_whole, profiled_whole)
        ),
        "profile_bytes": out.stat().st_size,
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
