"""Ground truth for the Python/native split.

``py_work`` spends its time in pure-Python bytecode; ``native_work`` spends its time in C
code (hashlib.sha256 on a big buffer, zlib.compress, sorted() of a big list). The program
measures the CPU time of every call itself (time.thread_time) and writes the totals to
the JSON file named by BENCH_TRUTH_FILE.

BENCH_MODE=calibrate: measure the cost of one unit of each kind and write how many units
give BENCH_TOTAL_S seconds split BENCH_PY_SHARE / (1 - BENCH_PY_SHARE).
BENCH_MODE=run (default): run BENCH_PY_UNITS and BENCH_NATIVE_UNITS units, interleaved.
"""

import hashlib
import json
import os
import random
import time
import zlib

PY_UNIT = 40000
_rng = random.Random(7)
BUF = bytes(_rng.getrandbits(8) for _ in range(1 << 16)) * 64  # 4 MiB
TEXT = b"".join(b"%d: sampled line %d\n" % (k, k * 7 % 1000) for k in range(40000))
DATA = [_rng.random() for _ in range(150000)]


def py_work(units):
    s = 0
    for _ in range(units):
        i = 0
        while i < PY_UNIT:
            s = (s + i * i) % 1000003
            i += 1
    return s


def native_work(units):
    h = 0
    for _ in range(units):
        h ^= hashlib.sha256(BUF).digest()[0]
        h ^= len(zlib.compress(TEXT, 6))
        h ^= int(sorted(DATA)[0] * 1000)
    return h


def timed(fn, units):
    start = time.thread_time()
    fn(units)
    return time.thread_time() - start


def write(payload):
    with open(os.environ["BENCH_TRUTH_FILE"], "w") as fh:
        json.dump(payload, fh)


def calibrate():
    total = float(os.environ.get("BENCH_TOTAL_S", "2"))
    share = float(os.environ.get("BENCH_PY_SHARE", "0.5"))
    py_cost = min(timed(py_work, 2) for _ in range(3)) / 2
    native_cost = min(timed(native_work, 1) for _ in range(3))
    write(
        {
            "py_units": max(1, round(total * share / py_cost)),
            "native_units": max(1, round(total * (1 - share) / native_cost)),
            "py_unit_s": py_cost,
            "native_unit_s": native_cost,
        }
    )


def main():
    if os.environ.get("BENCH_MODE") == "calibrate":
        calibrate()
        return
    py_units = int(os.environ["BENCH_PY_UNITS"])
    native_units = int(os.environ["BENCH_NATIVE_UNITS"])
    py_s = native_s = 0.0
    done_py = done_native = 0
    while done_py < py_units or done_native < native_units:
        py_turn = done_native >= native_units or (
            done_py < py_units and done_py * native_units <= done_native * py_units
        )
        if py_turn:
            py_s += timed(py_work, 1)
            done_py += 1
        else:
            native_s += timed(native_work, 1)
            done_native += 1
    write({"python_s": py_s, "native_s": native_s, "python_share": py_s / (py_s + native_s)})


if __name__ == "__main__":
    main()
