"""Big numpy arrays, each allocated on its own line and dropped before the next: np.zeros
(calloc), np.ones and np.empty (malloc) of 512 MiB, with 0 %, 50 % or 100 % of the pages
touched afterwards (on another line, which allocates nothing). Before them, a line that
builds a list of Python ints (Python's allocator) for the Python-fraction test."""

import numpy as np

N = 512 << 20  # bytes: uint8 elements


def touch(a, fraction):
    """Writes the first `fraction` of the array in place (numpy's fill: no allocation)."""
    n = int(len(a) * fraction)
    if n:
        a[:n] = 7


def python_ints():
    xs = [i * 3 for i in range(3_000_000)]  # mem:python-ints
    return len(xs)


def arrays():
    a = np.zeros(N, dtype=np.uint8)  # mem:zeros-0
    touch(a, 0.0)
    del a
    a = np.zeros(N, dtype=np.uint8)  # mem:zeros-50
    touch(a, 0.5)
    del a
    a = np.zeros(N, dtype=np.uint8)  # mem:zeros-100
    touch(a, 1.0)
    del a
    a = np.ones(N, dtype=np.uint8)  # mem:ones-100
    del a
    a = np.empty(N, dtype=np.uint8)  # mem:empty-0
    touch(a, 0.0)
    del a
    a = np.empty(N, dtype=np.uint8)  # mem:empty-50
    touch(a, 0.5)
    del a
    a = np.empty(N, dtype=np.uint8)  # mem:empty-100
    touch(a, 1.0)
    del a


print(python_ints())
arrays()
