"""Blocking calls made while another thread burns CPU (so the profiler is busy sampling):
each must return normally, with the right result, and not before its time; no EINTR.

Prints JSON: for each call, whether it gave the expected result, any error, and how long it
blocked. The caller checks "ok", "error" and "elapsed_s" against "min_s".
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


def later(action):
    def run():
        time.sleep(DELAY_S)
        action()

    t = threading.Thread(target=run)
    t.start()
    return t


def record(name, min_s, call, check):
    started = time.perf_counter()
    try:
        value = call()
        ok, error = check(value), None
    except BaseException as e:  # noqa: BLE001 - reported, not raised
        value, ok, error = None, False, f"{type(e).__name__}: {e}"
    elapsed = time.perf_counter() - started
    results[name] = {"ok": ok, "error": error, "elapsed_s": elapsed, "min_s": min_s}
    return value


def main():
    stop = threading.Event()
    burner = threading.Thread(target=burn, args=(stop,), daemon=True)
    burner.start()

    record("time.sleep", 0.2, lambda: time.sleep(0.2), lambda v: v is None)  # block:sleep

    r, w = os.pipe()
    writer = later(lambda: os.write(w, b"select"))
    ready = record("select.select", DELAY_S, lambda: select.select([r], [], [], 5.0), bool)
    results["select.select"]["ok"] &= ready is not None and ready[0] == [r]
    writer.join()
    os.read(r, 100)

    writer = later(lambda: os.write(w, b"pipe data"))
    record("os.read", DELAY_S, lambda: os.read(r, 100), lambda v: v == b"pipe data")
    writer.join()
    os.close(r)
    os.close(w)

    a, b = socket.socketpair()
    writer = later(lambda: b.sendall(b"socket data"))
    record("socket.recv", DELAY_S, lambda: a.recv(100), lambda v: v == b"socket data")
    writer.join()
    a.close()
    b.close()

    q = queue.Queue()
    record("queue.get timeout", 0.2, lambda: q.get(timeout=0.2), lambda v: False)
    if results["queue.get timeout"]["error"] == "Empty: ":
        results["queue.get timeout"].update(ok=True, error=None)  # the expected outcome
    writer = later(lambda: q.put("item"))
    record("queue.get", DELAY_S, lambda: q.get(timeout=5.0), lambda v: v == "item")
    writer.join()

    stop.set()
    burner.join()
    print(json.dumps(results, sort_keys=True, indent=1))


if __name__ == "__main__":
    main()
