"""A thread-per-request HTTP server (http.server.ThreadingHTTPServer) whose handler spends
its CPU in slow_digest(), hit by 8 client threads. Each request runs in a thread of its own
that lives a few milliseconds, shorter than a sampling interval. Every thread measures its
own CPU with time.thread_time(), and the program prints, as JSON on stdout, the CPU of
slow_digest() and of all its threads together: the ground truth for slow_digest's share."""

import hashlib
import http.server
import json
import sys
import threading
import time
import urllib.request

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 1300
REQUESTS = int(sys.argv[2]) if len(sys.argv) > 2 else 600
CLIENTS = 8

lock = threading.Lock()
cpu = {"slow_digest": 0.0, "threads": 0.0}


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
        add("slow_digest", time.thread_time() - t)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    def process_request_thread(self, request, client_address):
        t = time.thread_time()
        try:
            super().process_request_thread(request, client_address)
        finally:
            add("threads", time.thread_time() - t)


def measured(target, *args):
    t = time.thread_time()
    try:
        target(*args)
    finally:
        add("threads", time.thread_time() - t)


def client(port, n):
    for _ in range(n):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as response:
            response.read()


def main():
    main_start = time.thread_time()
    server = Server(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    serving = threading.Thread(target=measured, args=(server.serve_forever,))
    serving.start()
    clients = [
        threading.Thread(target=measured, args=(client, port, REQUESTS // CLIENTS))
        for _ in range(CLIENTS)
    ]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    server.shutdown()
    serving.join()
    server.server_close()
    add("threads", time.thread_time() - main_start)


main()
print(json.dumps(cpu))
