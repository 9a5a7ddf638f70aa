"""A burst of string concatenation (about 120 MiB allocated in a few milliseconds, some
1,500 memory samples), then 20 arrays of 8 MB kept to the end. Prints the arrays' bytes."""

import numpy as np


def concat(n):
    s = ""
    for _ in range(n):
        s += "abcdefghij"  # mem:burst
    return s


s = concat(5000)
kept = [np.zeros(1_000_000) for _ in range(20)]  # mem:kept
print(sum(a.nbytes for a in kept))
