"""Allocations of 100 B to 100 MB from different lines, each line's bytes counted by the
program itself (its truth), written as JSON to the file named by argv[1] (or stdout).

Every counted line makes one kind of object whose allocation size the program knows:
bytes(n) is one block of sys.getsizeof(...) bytes from Python's allocator; a list of ints
is what tracemalloc counts for one (measured once, before the loop); a NumPy buffer of n
bytes is one native block of n bytes (its small array object is counted apart). The lines
run interleaved, in a loop, so that a threshold on a running total would charge one line's
bytes to another.

usage: mem_mix_truth.py --calibrate          prints what one make_ints() allocates
       mem_mix_truth.py TRUTH_JSON INTS_BYTES  (INTS_BYTES: what --calibrate printed)

The calibration runs in a plain interpreter of its own: tracemalloc's raw-domain hook
crashes CPython (3.11) when another thread creates its thread state while it traces, which
a profiler's own threads may do.
"""

import json
import sys
import tracemalloc

import numpy as np

ITERATIONS = 150
truth = {
    "tiny": 0,
    "small": 0,
    "medium": 0,
    "keep": 0,
    "ints": 0,
    "big": 0,
    "huge": 0,
    "array_obj": 0,
}
kept = []
ARRAY_OBJ = sys.getsizeof(np.empty(0))  # the ndarray object without its buffer


def make_ints():
    return list(range(1000, 41_000))  # LINE_INTS


def bytes_of_make_ints():
    """What one make_ints() allocates, as tracemalloc counts it (sizes asked for; int
    objects are a little bigger than sys.getsizeof says). Nothing is freed during the call,
    so the peak above the start is the gross figure."""
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    made = make_ints()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del made
    return peak - before


if sys.argv[1] == "--calibrate":
    print(bytes_of_make_ints())
    sys.exit(0)
INTS_BYTES = int(sys.argv[2])


def one_pass(i):
    for _ in range(200):
        tiny = bytes(100 + i % 7)  # LINE_TINY
        truth["tiny"] += sys.getsizeof(tiny)
    for _ in range(20):
        small = bytes(10_000)  # LINE_SMALL
        truth["small"] += sys.getsizeof(small)
    medium = bytes(1_000_000)  # LINE_MEDIUM
    truth["medium"] += sys.getsizeof(medium)
    kept.append(bytes(100_000))  # LINE_KEEP
    truth["keep"] += sys.getsizeof(kept[-1])
    ints = make_ints()
    truth["ints"] += INTS_BYTES
    del ints
    big = np.ones(2_000_000, dtype=np.uint8)  # LINE_BIG
    truth["big"] += big.nbytes
    truth["array_obj"] += ARRAY_OBJ
    if i % 25 == 0:
        huge = np.ones(100_000_000, dtype=np.uint8)  # LINE_HUGE
        truth["huge"] += huge.nbytes
        truth["array_obj"] += ARRAY_OBJ
        del huge


for i in range(ITERATIONS):
    one_pass(i)

with open(sys.argv[1], "w") as f:
    f.write(json.dumps(truth))
