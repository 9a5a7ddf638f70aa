"""Spins on one known line until the test has seen it in `spyglass run --live`'s view
(the test then creates the file named by argv[1]), or for 60 s at most; says which."""

import os
import sys
import time

stop_file = sys.argv[1]
deadline = time.monotonic() + 60
total = 0
while not os.path.exists(stop_file) and time.monotonic() < deadline:
    for _ in range(200):
        total += sum(i * i for i in range(500))  # the live hot line
print("stopped by the test" if os.path.exists(stop_file) else "never stopped", flush=True)
