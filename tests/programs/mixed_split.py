"""Lines with known mixes of Python, native and system CPU time and of waiting.

Each marked line (a `# [kind]` comment) is timed by the program itself, on the lines just
before and just after it: CPU time with time.thread_time() (this thread's user + system time
as the kernel accounts it, so the profiler's own signal handling counts where it happens) and
wall time with time.perf_counter(). The measured truth goes to the JSON file named in argv:

    {"lines": {"kind": {"cpu_s": ..., "wall_s": ...}, ...}}

Every marked line does all its work on that one line (comprehensions run on the line they are
written on), so the profile has to put all of it there. The [python] line builds no list (its
condition is never true), so that it makes no system time through page faults.

usage: mixed_split.py TRUTH.json   (spin_ext must be importable)
"""

import json
import os
import sys
import time

import spin_ext

spin = spin_ext.spin_with_gil


def main(truth_path):
    truth = {}
    r = range(60_000)

    cpu0, wall0 = time.thread_time(), time.perf_counter()
    none = [i for i in range(3_000_000) if i * i % 7 > 6]  # [python]
    cpu1, wall1 = time.thread_time(), time.perf_counter()
    truth["python"] = (cpu1 - cpu0, wall1 - wall0)

    cpu0, wall0 = time.thread_time(), time.perf_counter()
    spin(0.2, True)  # [native]
    cpu1, wall1 = time.thread_time(), time.perf_counter()
    truth["native"] = (cpu1 - cpu0, wall1 - wall0)

    cpu0, wall0 = time.thread_time(), time.perf_counter()
    mix = [spin(0.001, True) + len([j for j in r]) for _ in range(100)]  # [python+native]
    cpu1, wall1 = time.thread_time(), time.perf_counter()
    truth["python+native"] = (cpu1 - cpu0, wall1 - wall0)

    cpu0, wall0 = time.thread_time(), time.perf_counter()
    noise = os.urandom(24 << 20)  # [system]
    cpu1, wall1 = time.thread_time(), time.perf_counter()
    truth["system"] = (cpu1 - cpu0, wall1 - wall0)

    cpu0, wall0 = time.thread_time(), time.perf_counter()
    naps = [time.sleep(0.003) or [j for j in r] for _ in range(40)]  # [python+sleep]
    cpu1, wall1 = time.thread_time(), time.perf_counter()
    truth["python+sleep"] = (cpu1 - cpu0, wall1 - wall0)

    cpu0, wall0 = time.thread_time(), time.perf_counter()
    time.sleep(0.15)  # [sleep]
    cpu1, wall1 = time.thread_time(), time.perf_counter()
    truth["sleep"] = (cpu1 - cpu0, wall1 - wall0)

    with open(truth_path, "w", encoding="utf-8") as fh:
        lines = {k: {"cpu_s": c, "wall_s": w} for k, (c, w) in truth.items()}
        json.dump({"lines": lines}, fh, indent=1)
    print(len(none), len(mix), len(noise), len(naps))


if __name__ == "__main__":
    main(sys.argv[1])
