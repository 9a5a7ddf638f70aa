#!/usr/bin/env python3
"""The wall time spyglass.dask.profile adds to a Dask job, measured interleaved.

    python bench/dask_overhead.py --reps 7

One LocalCluster (2 worker processes, 1 thread each) runs the same job (a CPU-heavy and an
allocation-heavy task type, as tests/programs/dask_job.py) alternately plain and inside
`spyglass.dask.profile` (memory profiled, snapshots every 5 s). Printed: each pair's wall
times, and the median ratios of the job alone (inside the block) and of the job with the
block's start and end (the workers' profiles collected and merged). Ratios, never absolute
times: the machine's load moves both runs of a pair alike.
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

from dask_job import alloc, burn
from distributed import Client, LocalCluster

import spyglass.dask


def job(client: Client, tasks: int) -> None:
    futures = [client.submit(burn, 2_000_000, pure=False) for _ in range(tasks)]
    futures += [client.submit(alloc, 1_000, pure=False) for _ in range(tasks)]
    client.gather(futures)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--tasks", type=int, default=8, help="tasks of each type per run")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp()) / "job.json"
    plain, inside, whole = [], [], []
    with (
        LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        job(client, 2)  # warm: imports, the functions' first trip
        for _ in range(args.reps):
            t0 = time.perf_counter()
            job(client, args.tasks)
            plain.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            with spyglass.dask.profile(client, outfile=out):
                t1 = time.perf_counter()
                job(client, args.tasks)
                t2 = time.perf_counter()
            whole.append(time.perf_counter() - t0)
            inside.append(t2 - t1)
            print(
                f"plain {plain[-1]:.3f} s, profiled {inside[-1]:.3f} s (with start and end "
                f"{whole[-1]:.3f} s)",
                flush=True,
            )
    result = {
        "load_average": os.getloadavg(),
        "plain_s": plain,
        "profiled_s": inside,
        "profiled_with_start_end_s": whole,
        "median_ratio_job": statistics.median(b / a for a, b in zip(plain, inside)),
        "median_ratio_with_start_end": statistics.median(b / a for a, b in zip(plain, whole)),
        "profile_bytes": out.stat().st_size,
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
