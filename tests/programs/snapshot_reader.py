"""A long-running program that looks at its own profile while it runs, as a user of
`spyglass run --snapshot-every` would: after 1.2 s of CPU-bound work it reads the profile
file (argv[1]), copies what it read to argv[2], and prints what it saw of its own work line
as JSON; then it works 0.3 s more and ends."""

import json
import shutil
import sys
import time


def busy(seconds):
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        n += sum(range(200))  # snapshot:work
    return n


busy(1.2)
with open(sys.argv[1], encoding="utf-8") as f:
    seen = json.load(f)
shutil.copyfile(sys.argv[1], sys.argv[2])
work = [
    line
    for entry in seen["files"].values()
    for line in entry["lines"]
    if "snapshot:work" in line["source"]
]
cpu = sum(line["cpu_python_s"] + line["cpu_native_s"] + line["cpu_system_s"] for line in work)
print(json.dumps({"snapshot": seen.get("snapshot"), "work_cpu_s": cpu}))
busy(0.3)
