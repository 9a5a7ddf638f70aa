"""A small program with a bit of everything spyglass reports: a pure-Python hot loop,
native work (hashing, compression, sorting), a worker thread and some waiting."""

import hashlib
import threading
import time
import zlib


def python_loop(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def native_work(data: bytes) -> int:
    digest = hashlib.sha256(data).digest()
    packed = zlib.compress(data, 6)
    ordered = sorted(data[:2_000_000])
    return len(digest) + len(packed) + len(ordered)


def worker(results: list) -> None:
    results.append(python_loop(1_500_000))


def main() -> None:
    data = bytes(range(256)) * 40_000
    results: list = []
    t = threading.Thread(target=worker, args=(results,), name="worker")
    t.start()
    results.append(python_loop(2_000_000))
    results.append(native_work(data))
    time.sleep(0.2)  # waiting shows up as wait, not CPU
    t.join()
    print("demo finished:", sum(results) % 1000)


if __name__ == "__main__":
    main()
