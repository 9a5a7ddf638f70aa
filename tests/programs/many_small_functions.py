"""Many small functions, each run for a few sampling intervals only, each spending its
time on one line in the interpreter's call machinery: instances of a Python class made in
a comprehension. Every copy is its own code object (compiled anew from this file's own
text, so its lines are this file's), as a program of many functions run once each (a
test suite, an import) has many codes sampled a few times. A code's first samples on a
call are taken before the profiler has worked out its call sites.

usage: many_small_functions.py [COPIES]  (default 80; each ~25 ms of CPU)
Prints the CPU the copies took, in seconds.
"""

import sys
import time

COPIES = int(sys.argv[1]) if len(sys.argv) > 1 else 80


class Item:
    def __init__(self, v):
        self.v = v


def work(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        [Item(i) for i in range(500)]  # many:hot


def copies(count):
    """`work` compiled `count` times: distinct code objects on this file's lines."""
    with open(__file__) as f:
        lines = f.read().splitlines(keepends=True)
    first = work.__code__.co_firstlineno
    end = first
    while end < len(lines) and (lines[end].startswith(" ") or not lines[end].strip()):
        end += 1
    text = "\n" * (first - 1) + "".join(lines[first - 1 : end])
    made = []
    for _ in range(count):
        namespace = {"time": time, "Item": Item}
        exec(compile(text, __file__, "exec"), namespace)
        made.append(namespace["work"])
    return made


def main():
    functions = copies(COPIES)
    start = time.thread_time()
    for function in functions:
        function(0.025)
    print(f"{time.thread_time() - start:.3f}")


if __name__ == "__main__":
    main()
