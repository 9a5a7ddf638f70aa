"""alloc: allocation-heavy work. Builds and drops many small objects (tuples, dicts,
strings, lists), grows and shrinks containers, and allocates and frees large buffers."""

from _driver import run


class Record:
    __slots__ = ("key", "links", "payload")

    def __init__(self, key, payload):
        self.key = key
        self.payload = payload
        self.links = []


def small_objects(seed):
    records = [Record(k, (k, seed, str(k))) for k in range(6000)]
    for k in range(1, len(records)):
        records[k].links.append(records[k // 2])
    index = {r.key: r.payload for r in records if r.key % 3}
    words = [f"w{k}-{seed}" for k in range(4000)]
    text = ",".join(words)
    return len(index) + len(text.split(",")) + len(records[-1].links)


def big_buffers(seed):
    total = 0
    for k in range(6):
        buf = bytearray(1 << 20)
        buf[k] = seed & 0xFF
        copy = bytes(buf)
        total += len(copy) + copy[k]
        del buf, copy
    return total


def churn(seed):
    pool = []
    for k in range(3000):
        pool.append([seed, k] * (k % 7 + 1))
        if len(pool) > 256:
            pool = pool[128:]
    return sum(len(x) for x in pool)


def step(i):
    return small_objects(i) + big_buffers(i) + churn(i)


if __name__ == "__main__":
    run(step)
