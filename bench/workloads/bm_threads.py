"""threads: several threads doing CPU work at once. Two run pure-Python loops (they hold the
GIL), two hash big buffers with hashlib (which releases the GIL), one compresses with zlib
(which also releases it); the main thread waits for them."""

import hashlib
import threading
import zlib

from _driver import run

BUFFER = bytes(range(256)) * (4 * 4096)  # 4 MiB
TEXT = b"".join(b"line %d of a fairly repetitive log file\n" % k for k in range(60000))


def python_worker(seed, out, slot):
    acc = seed
    for k in range(60000):
        acc = (acc * 1103515245 + k) & 0x7FFFFFFF
    out[slot] = acc


def hash_worker(seed, out, slot):
    digest = b""
    for _ in range(3):
        digest = hashlib.sha256(BUFFER + digest).digest()
    out[slot] = digest[0] + seed


def zlib_worker(seed, out, slot):
    out[slot] = len(zlib.compress(TEXT, 6)) + seed


def step(i):
    workers = [python_worker, python_worker, hash_worker, hash_worker, zlib_worker]
    out = [0] * len(workers)
    threads = [
        threading.Thread(target=fn, args=(i + slot, out, slot), name=f"worker-{slot}")
        for slot, fn in enumerate(workers)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(out)


if __name__ == "__main__":
    run(step)
