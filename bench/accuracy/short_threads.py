"""Ground truth for CPU time in threads that live shorter than a sampling interval.

A thread-per-request HTTP server (http.server.ThreadingHTTPServer, on loopback) whose
handler spends about 2 ms of CPU in ``slow_digest``, hit by 8 client threads: each request
runs in a thread of its own. Every thread measures its own CPU time (time.thread_time);
the program writes the CPU time of ``slow_digest`` and of all its threads, and their ratio
``digest_share``, to the JSON file named by BENCH_TRUTH_FILE. Each thread counts from its
start (time.thread_time() is the thread's CPU so far), and the main thread from before its
imports: starting threads and importing http.server are CPU a profile shows, and a truth
without them puts the digest's share too high.

BENCH_MODE=calibrate: write the request count giving about BENCH_TOTAL_S seconds of CPU
time in all. BENCH_MODE=run (default): serve BENCH_REQUESTS requests.
"""

import time

MAIN_START = time.thread_time()  # the imports below are the program's CPU too

import hashlib  # noqa: E402
import http.server  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import threading  # noqa: E402
import urllib.request  # noqa: E402

CLIENTS = 8
ROUNDS = 1300
lock = threading.Lock()
cpu = {"digest": 0.0, "threads": 0.0}


def add(key, seconds):
    with lock:
        cpu[key] += seconds


def slow_digest(data):
    h = data
    for _ in range(ROUNDS):
        h = hashlib.sha256(h).digest() + data[:16]
        s = 0
        for b in h[:40]:
            s += b
    return h


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        t = time.thread_time()
        body = slow_digest(b"x" * 64)[:16].hex().encode()
        add("digest", time.thread_time() - t)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            add("threads", time.thread_time())


def measured(target, *args):
    try:
        target(*args)
    finally:
        add("threads", time.thread_time())


def client(port, n):
    for _ in range(n):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as response:
            response.read()


def serve(requests):
    server = Server(("127.0.0.1", 0), Handler)
    serving = threading.Thread(target=measured, args=(server.serve_forever,))
    serving.start()
    per_client = max(1, requests // CLIENTS)
    clients = [
        threading.Thread(target=measured, args=(client, server.server_address[1], per_client))
        for _ in range(CLIENTS)
    ]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    server.shutdown()
    serving.join()
    server.server_close()
    add("threads", time.thread_time() - MAIN_START)


def write(payload):
    with open(os.environ["BENCH_TRUTH_FILE"], "w") as fh:
        json.dump(payload, fh)


def main():
    if os.environ.get("BENCH_MODE") == "calibrate":
        probe = 80
        serve(probe)
        total = float(os.environ.get("BENCH_TOTAL_S", "2"))
        write({"requests": max(probe, round(total / cpu["threads"] * probe))})
        return
    serve(int(os.environ["BENCH_REQUESTS"]))
    write(
        {
            "digest_s": cpu["digest"],
            "threads_s": cpu["threads"],
            "digest_share": cpu["digest"] / cpu["threads"],
        }
    )


if __name__ == "__main__":
    main()
