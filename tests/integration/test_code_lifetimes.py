"""Code objects that die while the run is profiled (a module exec'd and dropped, a
template compiled per request): the collector names each before it is freed, and a later
code object at the same address starts afresh. The collector resolves each sampled frame
through a cache of recent (code object, offset) pairs, which must never answer for a code
object that has died since."""

from __future__ import annotations

from pathlib import Path

from helpers import Runner, cpu, file_entry, stdout_json

# Eight modules of the same shape, each a few lines further down its file, run one after
# the other and dropped: each one's code objects are freed before the next is compiled,
# and CPython's allocator hands the next the same addresses (the program counts how often).
_MODULES = """
import gc, json, os, time
here = os.path.dirname(os.path.abspath(__file__))
BODY = (
    "def work(until):\\n"
    "    x = 0\\n"
    "    while time.thread_time() < until:\\n"
    "        x += 1\\n"
    "    return x\\n"
)
truth, addresses = {}, []
for k in range(8):
    path = os.path.join(here, f"gen_{k}.py")
    with open(path, "w") as f:
        f.write("import time\\n" + "\\n" * (3 * k) + BODY)
    with open(path) as f:
        ns = {}
        exec(compile(f.read(), path, "exec"), ns)
    addresses.append(id(ns["work"].__code__))
    t0 = time.thread_time()
    ns["work"](t0 + 0.15)
    truth[path] = time.thread_time() - t0
    del ns
    gc.collect()
print(json.dumps({"truth": truth, "reused": len(addresses) - len(set(addresses))}))
"""


def test_a_code_object_at_a_dead_ones_address_gets_its_own_samples(
    runner: Runner, tmp_path: Path
) -> None:
    script = tmp_path / "modules.py"
    script.write_text(_MODULES, encoding="utf-8")
    proc, profile = runner.spyglass([script], options=["--cpu-only"])
    assert proc.returncode == 0, proc.stderr
    assert profile is not None
    seen = stdout_json(proc)
    # Without reuse this test shows nothing; CPython 3.9 to 3.13 reused 6 or 7 of 7.
    assert seen["reused"] >= 3, seen
    for path, truth in seen["truth"].items():
        entry = file_entry(profile, path)
        # A cache that answered for the dead: the first module had 1.05 s, the others
        # 0 to 0.05 s each.
        assert 0.5 * truth <= cpu(entry) <= 1.5 * truth + 0.03, (path, truth, cpu(entry))
        hot = max(entry["lines"], key=cpu)
        first = int(Path(path).stem.split("_")[1]) * 3 + 2  # where its `def work` is
        assert first < hot["lineno"] <= first + 4, (path, hot["lineno"], first)
