"""Allocates many objects that refer to themselves, so that the garbage collector runs
often and has work to do, and measures the collector's CPU time itself with gc.callbacks.
Prints it as JSON."""

import gc
import json
import time

gc_time = 0.0
_start = [0.0]


def cb(phase, info):
    global gc_time
    if phase == "start":
        _start[0] = time.thread_time()
    else:
        gc_time += time.thread_time() - _start[0]


gc.callbacks.append(cb)


class Node:
    def __init__(self):
        self.other = self


keep = []
for _ in range(40):
    keep.extend(Node() for _i in range(20000))  # gc:alloc
gc.callbacks.remove(cb)
print(json.dumps({"gc_s": gc_time}))
