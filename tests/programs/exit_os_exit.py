"""Does some work, then os._exit(4) from the main process: exit status 4, no unwinding, and
output still in stdout's buffer (stdout is a pipe, so block-buffered) is lost."""

import os


def work():
    total = 0
    for i in range(1_000_000):
        total = (total + i * i) % 1_000_003  # exit:work
    return total


print("before", work(), flush=True)
print("lost: still in the buffer at os._exit")
try:
    os._exit(4)
finally:
    print("finally: not reached under plain python", flush=True)
