"""Runs tests/ext/alloc_storm.c's storms and prints, as JSON, what the threads measured of
themselves (their truth) next to what spyglass counted (spyglass._native.memory_totals()).

usage: mem_truth.py MODE LIBRARY      (LIBRARY: the built liballoc_storm.so)

MODE
  plain    no spyglass: the storms alone (is the fixture's truth consistent?)
  exact    start(memory=True); a 4-thread storm and a copy thread; stop()
  cycles   three start/storm/stop cycles, plus a storm while stopped
  fork     start(); a 4-thread storm running while the main thread forks; the child runs
           a storm of its own and sends its truth and totals back through a pipe

The library is loaded before spyglass.start(), as the hooks require. Thread ids are printed
as strings (JSON keys); "key_types" records what memory_totals() really keyed by.
"""

import ctypes
import json
import os
import select
import signal
import sys
import time

FIELDS = (
    "tid",
    "alloc_bytes",
    "alloc_count",
    "free_bytes",
    "free_count",
    "copy_bytes",
    "large_allocs",
    "huge_allocs",
    "checksum",
)
THREADS = 4
ALLOC, COPY = 0, 1  # kinds of storm
TIMEOUT_S = 60.0


class StormTruth(ctypes.Structure):
    """struct storm_truth of alloc_storm.c."""

    _fields_ = [(name, ctypes.c_int64 if name == "tid" else ctypes.c_uint64) for name in FIELDS]

    def as_dict(self):
        return {name: getattr(self, name) for name in FIELDS}


def load(path):
    lib = ctypes.CDLL(path)
    truth_p = ctypes.POINTER(StormTruth)
    lib.alloc_storm_begin.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_int, truth_p]
    lib.alloc_storm_begin.restype = ctypes.c_void_p
    lib.alloc_storm_wait_done.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.alloc_storm_finish.argtypes = [ctypes.c_void_p]
    lib.alloc_storm_run.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_int, truth_p]
    return lib


class Storm:
    """Threads of alloc_storm.c that did their work and wait, alive, for finish()."""

    def __init__(self, lib, seed, kind=ALLOC, nthreads=THREADS):
        self.lib = lib
        self.out = (StormTruth * nthreads)()
        self.handle = lib.alloc_storm_begin(nthreads, seed, kind, self.out)
        if not self.handle:
            raise SystemExit("alloc_storm_begin failed")

    def wait(self):
        if self.lib.alloc_storm_wait_done(self.handle, int(TIMEOUT_S * 1000)) != 0:
            raise SystemExit("the storm threads did not finish in time")
        return [t.as_dict() for t in self.out]

    def finish(self):
        if self.lib.alloc_storm_finish(self.handle) != 0:
            raise SystemExit("a storm thread failed")


def storm(lib, seed, kind=ALLOC, nthreads=THREADS):
    """A whole storm (threads started, done, joined): its truth."""
    out = (StormTruth * nthreads)()
    if lib.alloc_storm_run(nthreads, seed, kind, out) != 0:
        raise SystemExit("alloc_storm_run failed")
    return [t.as_dict() for t in out]


def totals():
    """memory_totals() with string keys, and the types its keys really had."""
    from spyglass import _native

    raw = _native.memory_totals()
    return (
        {str(tid): dict(values) for tid, values in raw.items()},
        sorted({type(tid).__name__ for tid in raw}),
    )


def plain(lib):
    return {
        "storms": [storm(lib, 11), storm(lib, 11)],
        "copy": storm(lib, 5, COPY, 1)[0],
        "main_tid": threading_native_id(),
    }


def threading_native_id():
    import threading

    return threading.get_native_id()


def exact(lib):
    import spyglass

    spyglass.start(memory=True)
    allocs = Storm(lib, 11)
    copies = Storm(lib, 5, COPY, 1)
    truth, copy = allocs.wait(), copies.wait()[0]
    profile = spyglass.stop()
    got, key_types = totals()
    allocs.finish()
    copies.finish()
    return {
        "truth": truth,
        "copy": copy,
        "totals": got,
        "key_types": key_types,
        "memory_profiled": profile.get("memory_profiled"),
    }


def cycles(lib):
    import spyglass

    rounds = []
    for k in range(3):
        spyglass.start(memory=True)
        profiled = Storm(lib, 100 + k)
        truth = profiled.wait()
        spyglass.stop()
        after_stop, _ = totals()
        profiled.finish()
        unprofiled = storm(lib, 200 + k)  # while stopped: must change nothing
        later, _ = totals()
        rounds.append(
            {"truth": truth, "totals": after_stop, "later": later, "unprofiled": unprofiled}
        )
    return {"rounds": rounds}


def fork(lib):
    import spyglass

    spyglass.start(memory=True)
    parent = Storm(lib, 31)
    read_end, write_end = os.pipe()
    pid = os.fork()  # while the parent's storm threads are allocating
    if pid == 0:
        status = 0
        try:
            os.close(read_end)
            child = Storm(lib, 47)
            child_truth = child.wait()
            child_totals, _ = totals()
            child.finish()
            message = {"truth": child_truth, "totals": child_totals, "pid": os.getpid()}
        except BaseException as e:  # report it: the parent decides
            message = {"error": repr(e)}
            status = 1
        with os.fdopen(write_end, "w") as fh:
            fh.write(json.dumps(message))
        os._exit(status)
    os.close(write_end)
    child, child_status = read_child(pid, read_end)
    truth = parent.wait()
    profile = spyglass.stop()
    got, _ = totals()
    parent.finish()
    return {
        "truth": truth,
        "totals": got,
        "child": child,
        "child_status": child_status,
        "memory_profiled": profile.get("memory_profiled"),
    }


def read_child(pid, fd):
    """The child's JSON message and exit status; None and "deadlock" if it hangs."""
    chunks = []
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(0.0, left))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None, "deadlock: no answer from the child in time"
        data = os.read(fd, 1 << 16)
        if not data:
            break
        chunks.append(data)
    os.close(fd)
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return json.loads(b"".join(chunks) or b"null"), os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None, "deadlock: the child did not exit in time"


MODES = {"plain": plain, "exact": exact, "cycles": cycles, "fork": fork}

if __name__ == "__main__":
    mode, library = sys.argv[1], sys.argv[2]
    result = MODES[mode](load(library))
    print(json.dumps(result))
