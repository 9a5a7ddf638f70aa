"""Allocations of 100 B to 100 MB from different lines, each line's bytes counted by the
program itself (its truth), written as JSON to the file named by argv[1] (or stdout).

Every counted line makes one kind of object whose allocation size the program knows:
bytes(n) is one block of sys.getsizeof(...) bytes from Python's allocator; a NumPy buffer
of n bytes is one native block of n bytes (its small array object is counted too); ctypes'
create_string_buffer is a native block too. The lines run interleaved, in a loop, so that
a threshold on a running total would charge one line's bytes to another.

usage: mem_mix_truth.py TRUTH_JSON [ITERATIONS]
"""

import json
import sys

import numpy as np

ITERATIONS = int(sys.argv[2]) if len(sys.argv) > 2 else 150
truth = {"tiny": 0, "small": 0, "medium": 0, "keep": 0, "big": 0, "huge": 0, "array_obj": 0}
kept = []
ARRAY_OBJ = sys.getsizeof(np.empty(0)) - 0  # the ndarray object without its buffer


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

out = json.dumps(truth)
if len(sys.argv) > 1 and sys.argv[1] != "-":
    with open(sys.argv[1], "w") as f:
        f.write(out)
else:
    print(out)
