"""The leak suite: programs that leak and programs that only look as if they might, one per
case. A line that leaks carries the comment "LEAK"; no other line may be reported as one.
Each case prints, as JSON, the bytes its leaking lines still hold at the end (measured by
the program itself: sys.getsizeof, or what the C code says it allocated).

usage: mem_leak_suite.py CASE [EXT_DIR]      (EXT_DIR: where alloc_paths is built, for native)
"""

import json
import sys
import threading
import time

CASE = sys.argv[1]
kept = []
truth = {"kept_bytes": 0}


def churn(n=20_000):
    """Short-lived work of many sizes: strings, a list, a 1 MiB buffer."""
    tmp = [str(j) for j in range(n)]
    buf = bytearray(1 << 20)
    return len(tmp) + len(buf)


def case_import():
    import numpy  # a big library: allocates much once, keeps it  # noqa: F401

    for _ in range(150):
        churn()


def case_import_then_little():
    """A short script: imports a big library, then works less time than the import took."""
    import decimal  # noqa: F401
    import email.mime.multipart  # noqa: F401

    import numpy  # a big library's import, longer than what follows  # noqa: F401

    end = time.perf_counter() + 0.05
    while time.perf_counter() < end:
        pass


def case_temporaries():
    for i in range(150):
        big = bytes(6 << 20)  # a 6 MiB temporary each pass
        mid = [bytes(100 + i % 50) for _ in range(2000)]
        churn()
        del big, mid


def case_build_then_drop():
    for _ in range(6):
        table = [i * 2 for i in range(600_000)]  # built, used, dropped
        total = sum(table)
        del table
        for _ in range(15):
            churn()
    return total


def case_cache_once():
    cache = {i: bytes(1000) for i in range(30_000)}  # filled once, then only read
    for i in range(150):
        churn()
        _ = cache[i]


def case_cache_filled_by_requests():
    """A server's cache: the first 30 % of its requests miss and fill it, the rest are hits.
    The misses make most of the program's allocations while it fills."""
    cache = {}
    kept.append(cache)  # still held at the end, as a server's is

    def handle(i):
        key = i % 6_000
        value = cache.get(key)
        if value is None:
            # A tuple: a list would take its object from the list free list, which the
            # temporaries below fill, and hold it for them (docs/memory-profiling.md, Limits).
            value = cache[key] = tuple(key * 7 + 100_000 + j for j in range(400))
        return len([x + 1 for x in value[:100]])  # the request's own temporaries

    for i in range(20_000):
        handle(i)


def case_built_in_threads():
    """Two threads each build a structure once, side by side, taking turns for the GIL; then
    a pool's tasks each make a buffer the program keeps, and it idles before it ends."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    def arrays():
        kept.append([np.ones(1_000_000) for _ in range(20)])  # built once, kept

    def rows():
        kept.append([bytes(1000) for _ in range(60_000)])  # built once, kept

    threads = [threading.Thread(target=rows), threading.Thread(target=arrays)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with ThreadPoolExecutor(4) as pool:
        kept.append(list(pool.map(lambda k: bytearray(8 << 20), range(16))))
    time.sleep(0.2)


def case_build_at_end():
    for _ in range(100):
        churn()
    # built in one go just before the profile ends, and kept: nothing repeats, no leak
    kept.extend([bytes(1000) for _ in range(60_000)])


def case_cyclic_garbage():
    """Each request's state is a small graph with cycles, kept in a window of recent ones
    and then dropped: by then the collector has moved it to its oldest generation, where it
    waits for a full collection that a run this short never reaches. Garbage, not a leak."""
    import collections

    class Node:
        def __init__(self, parent=None):
            self.parent = parent
            self.children = []
            self.data = bytearray(3000)
            if parent is not None:
                parent.children.append(self)

    recent = collections.deque(maxlen=400)
    for _ in range(6000):
        root = Node()
        for _ in range(4):
            Node(root)
        recent.append(root)


def case_leak_in_quiet_loop():
    """The loop's other line computes without allocating: between two samples of the kept
    line nothing else is sampled, and only the CPU samples see the loop go round."""
    values = [0.5] * 20_000

    def busy():
        total = 0.0
        for v in values:
            total += v
        return total

    for _ in range(800):
        kept.append(bytes(100_000))  # LEAK: 100 KB kept each pass
        busy()
    truth["kept_bytes"] = sum(sys.getsizeof(b) for b in kept)  # counted after: no allocation


def case_global_growth():
    for _ in range(20):
        kept.append(bytearray(16 << 20))  # LEAK: 20 x 16 MiB appended to a global list
        truth["kept_bytes"] += sys.getsizeof(kept[-1])
        for _ in range(6):
            churn()


def case_lone_line_leak():
    for _ in range(60):
        kept.append(bytearray(200_000))  # LEAK: the loop's only allocating line, between sleeps
        truth["kept_bytes"] += sys.getsizeof(kept[-1])
        time.sleep(0.02)


def case_small_leak_big_churn():
    import numpy as np

    for _ in range(200):
        kept.append(bytes(100_000))  # LEAK: 100 KB kept each pass
        truth["kept_bytes"] += sys.getsizeof(kept[-1])
        a = np.zeros(2_000_000 // 8)  # 2 MB of churn each pass
        a[::512] = 1
        churn()


def case_thread_leak():
    stop = threading.Event()

    def worker():
        while not stop.is_set():  # for as long as the main thread works
            kept.append(bytes(200_000))  # LEAK: a worker thread keeps 200 KB a pass
            truth["kept_bytes"] += sys.getsizeof(kept[-1])
            churn()

    t = threading.Thread(target=worker)
    t.start()
    for _ in range(120):
        churn()
    stop.set()
    t.join()


def case_leak_then_idle():
    """A thread-per-request server: each request keeps 100 KB, then the server idles a while
    and writes a summary as it shuts down. Idle seconds are not the program's allocations."""

    def handle():
        kept.append(bytes(100_000))  # LEAK: each request's thread keeps 100 KB
        truth["kept_bytes"] += sys.getsizeof(kept[-1])
        churn(5_000)

    for _ in range(150):
        t = threading.Thread(target=handle)
        t.start()
        t.join()
    time.sleep(1.5)  # idle, longer than all the requests took
    summary = [str(i) for i in range(100_000)]
    return len(summary)


def case_native_leak():
    sys.path.insert(0, sys.argv[2])
    import alloc_paths

    for _ in range(200):
        truth["kept_bytes"] += alloc_paths.run(0, 150_000, 1)  # LEAK: C code keeps 150 KB
        churn()


def case_peak():
    """The footprint peaks while a temporary table is alive; the kept line holds a third."""
    for _ in range(10):
        kept.append(bytes(4 << 20))  # held at the peak: 40 MiB
    table = [bytes(1000) for _ in range(100_000)]  # PEAK: ~105 MiB, dropped after
    truth["table_bytes"] = sum(sys.getsizeof(b) for b in table)
    del table
    truth["kept_bytes"] = sum(sys.getsizeof(b) for b in kept)
    for _ in range(30):
        churn()


globals()["case_" + CASE]()
print(json.dumps(truth))
