"""The program's one line calls a library that recurses deeper than a stack sample keeps
(copy.deepcopy of a 400-level tree: some 1,200 frames). Prints, as JSON on stdout, the CPU
the line took as the program measured it."""

import copy
import json
import sys
import time

sys.setrecursionlimit(10_000)


def make(depth):
    node = {"leaf": list(range(20))}
    for i in range(depth):
        node = {"child": node, "tags": ["a", "b", str(i)], "n": i}
    return node


tree = make(400)
t0 = time.process_time()
for _ in range(300):
    c = copy.deepcopy(tree)  # deep:call
print(json.dumps({"cpu": time.process_time() - t0}))
