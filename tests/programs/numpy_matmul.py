"""A NumPy matrix product on one thread (the test sets OPENBLAS_NUM_THREADS=1 and friends),
so that its time is the calling line's native time, in the BLAS kernel.

usage: numpy_matmul.py
"""

import numpy as np


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((500, 500))
    b = rng.standard_normal((500, 500))
    total = 0.0
    # The first native samples in a library come before its unwind tables are compiled, and
    # keep no callers (docs/cpu-sampling.md); on a busy machine that compile is slow: the
    # judged line comes after this warm-up.
    for _ in range(20):
        total += float((a @ b)[0, 0])  # names:warm-up
    for _ in range(40):
        total += float((a @ b)[0, 0])  # names:matmul
    print(round(total, 3))


if __name__ == "__main__":
    main()
