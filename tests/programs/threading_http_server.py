"""A ThreadingHTTPServer answering 608 requests, each in a thread of its own (610 threads
with the main one and the server's): the shape of a thread-per-request service whose HTML
report must stay small."""

import json
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"n": sum(i * i for i in range(20000)), "path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
t = threading.Thread(target=srv.serve_forever, daemon=True)
t.start()
port = srv.server_address[1]
for i in range(608):
    urllib.request.urlopen(f"http://127.0.0.1:{port}/item/{i}").read()
srv.shutdown()
