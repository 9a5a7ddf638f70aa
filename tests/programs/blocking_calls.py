"""Blocking calls made while another thread burns CPU (so the profiler is busy sampling):
each must return normally, with the right result, and not before its time; no EINTR.

A call waiting for data must not return before a writer thread has written it (the writer
notes the time just before writing); a call with a timeout must not return before the
timeout has run out. Prints JSON, per call: "ok" (expected result), "error" (what it raised,
if unexpected), "elapsed_s", and "early_by_s" (> 0: it returned that much too early).
usage: blocking_calls.py   (spin_ext must be importable)
"""

import json
import os
import queue
import select
import socket
import threading
import time

import spin_ext

DELAY_S = 0.15  # how long a writer thread waits before it writes
results = {}


def burn(stop):
    while not stop.is_set():
        spin_ext.spin_without_gil(0.005)


class Later:
    """Runs `action` in a new thread after DELAY_S; `at` is when it started the action."""

    def __init__(self, action):
        self.action = action
        self.at = float("inf")
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        time.sleep(DELAY_S)
        self.at = time.perf_counter()
        self.action()

    def join(self):
        self.thread.join()
        return self.at


def record(name, call, check, earliest=None, expected_error=None):
    """Times call(); earliest() says when it may return at the soonest, once it has."""
    started = time.perf_counter()
    try:
        value = call()
        ok, error = check(value), None
    except Exception as e:
        value, ok, error = None, type(e) is expected_error, f"{type(e).__name__}: {e}"
        if ok:
            error = None
    returned = time.perf_counter()
    soonest = earliest() if earliest else started
    results[name] = {
        "ok": ok,
        "error": error,
        "elapsed_s": returned - started,
        "early_by_s": max(0.0, soonest - returned),
    }
    return value


def main():
    stop = threading.Event()
    burner = threading.Thread(target=burn, args=(stop,), daemon=True)
    burner.start()

    t0 = time.perf_counter()
    record("time.sleep", lambda: time.sleep(0.2), lambda v: v is None, lambda: t0 + 0.2)

    r, w = os.pipe()
    writer = Later(lambda: os.write(w, b"select"))
    record(
        "select.select", lambda: select.select([r], [], [], 5.0), lambda v: v[0] == [r], writer.join
    )
    os.read(r, 100)

    writer = Later(lambda: os.write(w, b"pipe data"))
    record("os.read", lambda: os.read(r, 100), lambda v: v == b"pipe data", writer.join)
    os.close(r)
    os.close(w)

    a, b = socket.socketpair()
    writer = Later(lambda: b.sendall(b"socket data"))
    record("socket.recv", lambda: a.recv(100), lambda v: v == b"socket data", writer.join)
    a.close()
    b.close()

    q = queue.Queue()
    t0 = time.perf_counter()
    record(
        "queue.get timeout",
        lambda: q.get(timeout=0.2),
        lambda v: False,
        lambda: t0 + 0.2,
        queue.Empty,
    )
    writer = Later(lambda: q.put("item"))
    record("queue.get", lambda: q.get(timeout=5.0), lambda v: v == "item", writer.join)

    stop.set()
    burner.join()
    print(json.dumps(results, sort_keys=True, indent=1))


if __name__ == "__main__":
    main()
