"""Lines whose native time goes to known native functions: native_names (tests/ext), a
library loaded with ctypes mid-run, and the standard library's sorted, zlib, hashlib and re.
Prints, as JSON, the CPU seconds each native_names function measured it burned itself.

usage: native_names_calls.py SECONDS LIBRARY   (native_names must be importable; LIBRARY is
a copy of it to load with ctypes.CDLL once the run is under way)
"""

import ctypes
import hashlib
import json
import os
import random
import re
import sys
import time
import zlib

import native_names


def settle(seconds=0.03):
    """A little pure Python, so a marked line's first sample carries its own time only."""
    deadline = time.thread_time() + seconds
    while time.thread_time() < deadline:
        pass


def tick():
    x = 0
    for i in range(2000):
        x += i
    return x


def main():
    seconds = float(sys.argv[1])
    truth = {}
    settle()
    truth["c"] = native_names.burn_c(seconds)  # names:plain_c
    settle()
    truth["cpp"] = native_names.burn_cpp(seconds)  # names:cpp
    settle()
    truth["hidden"] = native_names.burn_hidden(seconds)  # names:hidden
    settle()
    truth["chain"] = native_names.burn_chain(seconds)  # names:chain
    settle()
    truth["callback"] = native_names.call_back(tick, 50, seconds / 50)  # names:callback
    settle()
    library = ctypes.CDLL(sys.argv[2])  # loaded now, while the profiler runs
    library.plain_c_burn.restype = ctypes.c_double
    library.plain_c_burn.argtypes = [ctypes.c_double]
    settle()
    truth["ctypes"] = library.plain_c_burn(seconds)  # names:ctypes
    numbers = [random.random() for _ in range(1_000_000)]
    settle()
    for _ in range(3):
        numbers = sorted(numbers, reverse=True)  # names:sorted
    text = os.urandom(2 << 20).hex().encode()
    settle()
    zlib.compress(text, 9)  # names:zlib
    block = b"\x5a" * (256 << 20)
    settle()
    hashlib.sha256(block).hexdigest()  # names:sha256
    words = "alpha beta gamma delta " * 1_000_000
    settle()
    re.findall(r"[0-9]+q", words)  # names:re  (a scan that finds nothing to allocate)
    print(json.dumps(truth))


if __name__ == "__main__":
    main()
