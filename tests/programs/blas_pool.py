"""Matrix products whose work OpenBLAS shares with a pool of its own threads (run with
OPENBLAS_NUM_THREADS=2), then a pure-Python loop; prints each part's process CPU time,
the pool's threads included."""

import json
import time

import numpy as np

a = np.random.default_rng(1).random((900, 900))
b = np.random.default_rng(2).random((900, 900))


def multiply(n):
    c = None
    for _ in range(n):
        c = a @ b  # blas:matmul
    return c


t0 = time.process_time()
multiply(20)
t1 = time.process_time()
print(json.dumps({"matmul_cpu_s": t1 - t0}))
