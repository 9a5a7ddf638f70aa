"""Many small functions, each run for a few sampling intervals only, each spending its
time on one line in the interpreter's call machinery: instances of a Python class made.
Every copy is its own code object (compiled anew from this file's own text, so its lines
are this file's), as a program of many functions run once each (a test suite, an import)
has many codes sampled a few times. A code's first samples on a
call are taken before the profiler has worked out its call sites.

usage: many_small_functions.py [--code-deaths] [--faulthandler] [COPIES]
  (default 80 copies; each ~25 ms of CPU)
With --code-deaths, code objects die all the while too (a fresh snippet is compiled and
run, then dropped, between batches), as in a program that imports or evals as it goes.
With --faulthandler, faulthandler is enabled, as pytest does: its SIGSEGV handler is then
first in line. Each copy first leaves, above its value stack's top, a slot that points at a
freed 1 MiB bytes object: run with MALLOC_MMAP_THRESHOLD_ below that, its memory was a
mapping of its own, and is unmapped. Prints the CPU the copies took, in seconds.
"""

import faulthandler
import sys
import time

FLAGS = {"--code-deaths", "--faulthandler"}
CODE_DEATHS = "--code-deaths" in sys.argv
ARGS = [a for a in sys.argv[1:] if a not in FLAGS]
COPIES = int(ARGS[0]) if ARGS else 80
if "--faulthandler" in sys.argv:
    faulthandler.enable()


class Item:
    def __init__(self, v):
        self.v = v


def work(seconds):
    held = (0, 0, 0, bytes(1 << 20))  # the bytes object is pushed on the stack's fourth slot
    del held
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        for i in range(500):
            Item(i)  # many:hot
        if CODE_DEATHS:
            exec("pass")  # a code object made and dropped


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
        namespace = {"time": time, "Item": Item, "CODE_DEATHS": CODE_DEATHS}
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
