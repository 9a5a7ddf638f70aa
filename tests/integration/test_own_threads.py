"""spyglass's own threads in a profiled process carry names of their own, so that `top -H`,
gdb, py-spy and /proc tell them from the program's; the program's threads keep theirs."""

from __future__ import annotations

from pathlib import Path

from helpers import Runner, stdout_json

_LIST = """
import json, os, sys, threading, time
ready = threading.Event()
done = threading.Event()
def worker():
    ready.set()
    done.wait()
t = threading.Thread(target=worker, name="program-worker")
t.start()
ready.wait()
time.sleep(0.1)  # a few intervals: every thread of spyglass's has started
names = {}
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{tid}/comm") as f:
        names[int(tid)] = f.read().strip()
done.set()
t.join()
process = os.path.basename(sys.executable)[:15]  # what exec named the process
print(json.dumps({"names": names, "main": os.getpid(), "worker": t.native_id, "process": process}))
"""


def test_spyglass_threads_are_named_and_the_programs_keep_their_names(
    runner: Runner, tmp_path: Path
) -> None:
    script = tmp_path / "names.py"
    script.write_text(_LIST, encoding="utf-8")
    proc, profile = runner.spyglass([script], options=["--cpu-only"])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    seen = stdout_json(proc)
    names = {int(k): v for k, v in seen["names"].items()}
    # The program's threads: named as exec named its process, as under plain python.
    assert names[seen["main"]] == names[seen["worker"]] == seen["process"], names
    ours = sorted(v for k, v in names.items() if k not in (seen["main"], seen["worker"]))
    assert ours == ["spyglass-ctl", "spyglass-upkeep", "spyglass-wait"], names
