"""Ground truth for function bias (Scalene paper, section 6.2).

``inline_loop`` and ``call_loop`` compute the same thing; ``call_loop`` does it by calling
``helper`` each iteration. The harness varies the share of time spent in ``call_loop``
(``helper`` included). The program measures the CPU time of every chunk of each loop
itself (time.thread_time) and writes the totals to the JSON file named by BENCH_TRUTH_FILE.

BENCH_MODE=calibrate: measure per-iteration costs and write the iteration counts that give
BENCH_TOTAL_S seconds with a share BENCH_FRACTION in call_loop.
BENCH_MODE=run (default): run BENCH_N_CALL and BENCH_N_INLINE iterations, interleaved in
chunks of CHUNK iterations.
"""

import json
import os
import time

CHUNK = 20000
MODULUS = 1000003


def helper(x, i):
    return (x * 31 + i) % MODULUS


def inline_loop(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) % MODULUS
    return x


def call_loop(n):
    x = 0
    for i in range(n):
        x = helper(x, i)
    return x


def timed(fn, n):
    start = time.thread_time()
    fn(n)
    return time.thread_time() - start


def write(payload):
    with open(os.environ["BENCH_TRUTH_FILE"], "w") as fh:
        json.dump(payload, fh)


def calibrate():
    total = float(os.environ.get("BENCH_TOTAL_S", "2"))
    fraction = float(os.environ["BENCH_FRACTION"])
    probe = 5 * CHUNK
    call_cost = min(timed(call_loop, probe) for _ in range(3)) / probe
    inline_cost = min(timed(inline_loop, probe) for _ in range(3)) / probe
    write(
        {
            "n_call": max(CHUNK, round(total * fraction / call_cost)),
            "n_inline": max(CHUNK, round(total * (1 - fraction) / inline_cost)),
            "call_iteration_s": call_cost,
            "inline_iteration_s": inline_cost,
        }
    )


def main():
    if os.environ.get("BENCH_MODE") == "calibrate":
        calibrate()
        return
    n_call = int(os.environ["BENCH_N_CALL"])
    n_inline = int(os.environ["BENCH_N_INLINE"])
    call_s = inline_s = 0.0
    done_call = done_inline = 0
    while done_call < n_call or done_inline < n_inline:
        call_turn = done_inline >= n_inline or (
            done_call < n_call and done_call * n_inline <= done_inline * n_call
        )
        if call_turn:
            n = min(CHUNK, n_call - done_call)
            call_s += timed(call_loop, n)
            done_call += n
        else:
            n = min(CHUNK, n_inline - done_inline)
            inline_s += timed(inline_loop, n)
            done_inline += n
    write({"call_s": call_s, "inline_s": inline_s, "call_share": call_s / (call_s + inline_s)})


if __name__ == "__main__":
    main()
