"""A C library call that blocks and does not retry on EINTR (unusual_block.poll_idle_pipe:
one poll() with a 300 ms timeout on a pipe nobody writes), made 20 times by four threads
while another thread computes in Python. A profiler whose signals reached the blocked
threads would make some calls return -1/EINTR early.

Prints one line per poller, then a JSON object: every call's (result, errno) and the
shortest call in ms.
usage: unusual_poll_no_retry.py   (unusual_block must be importable)
"""

import json
import threading

import unusual_block

POLLERS = 4
CALLS_EACH = 5
TIMEOUT_MS = 300


def burn(stop, rounds):
    n = 0
    while not stop.is_set():
        for i in range(2_000):
            n = (n * 31 + i) % 1_000_003  # poll:burn
        rounds[0] += 1


def poller(index, results):
    for _ in range(CALLS_EACH):
        result, error, elapsed_ms = unusual_block.poll_idle_pipe(TIMEOUT_MS)  # poll:call
        results.append((index, result, error, elapsed_ms))


def main():
    stop = threading.Event()
    rounds = [0]
    burner = threading.Thread(target=burn, args=(stop, rounds), name="burner")
    burner.start()
    results = []
    pollers = [
        threading.Thread(target=poller, args=(i, results), name=f"poller-{i}")
        for i in range(POLLERS)
    ]
    for t in pollers:
        t.start()
    for t in pollers:
        t.join()
    stop.set()
    burner.join()
    for i in range(POLLERS):
        mine = [(r, e) for index, r, e, _ in results if index == i]
        print(f"poller {i}: {mine}")
    print(
        json.dumps(
            {
                "calls": [[r, e] for _, r, e, _ in results],
                "shortest_ms": min(ms for *_, ms in results),
                "burner_rounds": rounds[0],
            }
        )
    )


if __name__ == "__main__":
    main()
