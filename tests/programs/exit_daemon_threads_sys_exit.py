"""Does some work, then sys.exit(3) while daemon threads still run (see
exit_daemon_threads.py): exit status 3."""

import sys
import threading
import time


def spin():
    while True:
        sum(range(1000))


def work():
    total = 0
    for i in range(1_000_000):
        total = (total + i * i) % 1_000_003  # exit:work
    return total


threading.Thread(target=spin, daemon=True).start()
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
print("before", work())
sys.exit(3)
