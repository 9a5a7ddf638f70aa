"""Two worker threads allocate 150 blocks of 1 MiB each (kept until the thread ends) while
the main thread only waits for them in join()."""

import threading

BLOCKS = 150


def worker(out, k):
    mine = []
    for _ in range(BLOCKS):
        mine.append(bytearray(1 << 20))  # mem:worker
    out[k] = len(mine)


results = [0, 0]
threads = [threading.Thread(target=worker, args=(results, k)) for k in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()  # mem:join
print(results)
