"""An installed library (the tests copy it under a site-packages directory) that runs a
call's work on a pool of its own Python threads, as pandas's readers and many I/O
libraries do, and one that starts a thread working in the background."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor


def _spin(seconds):
    end = time.thread_time() + seconds
    total = 0
    while time.thread_time() < end:
        for i in range(2000):
            total += i % 7
    return total


def _chunk(seconds):
    kept = [bytearray(1 << 20) for _ in range(4)]  # 4 MiB kept by the caller
    _spin(seconds)
    return kept


def load(chunks, seconds):
    """`chunks` chunks of `seconds` of CPU each, on two threads; returns what they made."""
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(_chunk, [seconds] * chunks))


def call_back(function, seconds):
    """Calls the caller's `function` while a thread of the library's own spins `seconds`."""
    thread = threading.Thread(target=_spin, args=(seconds,))
    thread.start()
    function()
    thread.join()


def spin_in_background(seconds):
    """A thread of the library's own spinning `seconds`, which nothing waits on."""
    thread = threading.Thread(target=_spin, args=(seconds,))
    thread.start()
    return thread


def _fill(mib, seconds):
    block = bytearray(mib << 20)
    _spin(seconds)
    return block


def fill(mib, seconds):
    """A block of `mib` MiB that a thread of the library's makes as soon as it starts, then
    `seconds` of CPU: the call's result, made before anything could see the caller wait."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(_fill, mib, seconds).result()
