"""The program's process writes its profile in the compact form profile files have (schema 3:
rows without their zero figures, frames naming files by index, ASCII), and a run of that one
process has its profile written from that text with only the run's own members set: the
same profile merge_run makes of it, without decoding it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from helpers import Runner, load_profile
from spyglass.profile_model import fields
from spyglass.profile_model.compact import compacted, expanded
from spyglass.runtime import fragments
from spyglass.runtime.output import profile_text

# Threads that do different work (some rows have CPU but no wait, others wait only), names
# outside ASCII, and allocations: rows with figures that are 0 and figures that are not.
PROGRAM = """\
import os, sys, threading, time
import spyglass

def rechne_größe(n):
    blocks = [bytearray(3000) for _ in range(n)]
    total = 0
    for i in range(n * 300):  # in the function's own code (a comprehension has its own)
        total += i * i
    return total

def ruhe():
    time.sleep(0.15)

spyglass.start(memory={memory})
threads = [threading.Thread(target=rechne_größe, args=(3000,), name="ärger-1"),
           threading.Thread(target=ruhe, name="sleeper")]
for t in threads:
    t.start()
rechne_größe(3000)
for t in threads:
    t.join()
text = spyglass.api.stop_to_json(program="prog.py", argv=["prog.py", "a"])
os.makedirs(sys.argv[1], exist_ok=True)
with open(os.path.join(sys.argv[1], f"process-{{os.getpid()}}-0a0b0c0d.json"), "w") as f:
    f.write(text)
print(os.getpid())
"""


def _fragment(runner: Runner, memory: bool) -> tuple[Path, int]:
    script = runner.workdir / f"writes_fragment_{memory}.py"
    script.write_text(PROGRAM.format(memory=memory), encoding="utf-8")
    fragments_dir = runner.workdir / f"fragments-{memory}"
    proc = runner.python([script, fragments_dir])
    assert proc.returncode == 0, proc.stderr
    return fragments_dir, int(proc.stdout.split()[-1])


@pytest.fixture(scope="module", params=[False, True], ids=["cpu-only", "memory"])
def written(request: Any, make_runner: Any) -> tuple[Path, int]:
    return _fragment(make_runner("compact"), request.param)


def _text(fragments_dir: Path) -> str:
    (path,) = fragments_dir.glob("process-*.json")
    return path.read_text(encoding="utf-8")


def test_the_native_writer_writes_the_compact_form(written: tuple[Path, int]) -> None:
    text = _text(written[0])
    assert text.isascii()
    doc = json.loads(text)
    assert isinstance(doc["frame_files"], list) and len(set(doc["frame_files"])) == len(
        doc["frame_files"]
    )
    assert all(isinstance(f["file"], int) for f in doc["frames"])
    left_out = 0
    for key, level in (("threads", "thread"), ("stacks", "stack")):
        zeros = fields.zero_omitted(level)
        for row in doc[key]:
            assert not [k for k in zeros if row.get(k, 1) == 0], f"{level} row keeps a 0: {row}"
            left_out += sum(1 for k in zeros if k not in row)
    assert left_out > 0, "no row had a figure to leave out: the program tests nothing"
    # Exactly what Python's own compaction makes of the expanded document.
    assert compacted(expanded(doc)) == doc
    # Names outside ASCII are escaped in the text and whole once read.
    names = {t["name"] for t in doc["threads"]}
    assert "ärger-1" in names and "\\u00e4rger-1" in text
    assert any(f["function"] == "rechne_größe" for f in doc["frames"])
    functions = [f["name"] for stats in doc["files"].values() for f in stats["functions"]]
    assert "rechne_größe" in functions


def _copy(fragments_dir: Path, tmp_path: Path, name: str) -> str:
    target = tmp_path / name
    shutil.copytree(fragments_dir, target)
    return str(target)


def test_a_run_of_one_process_is_its_text_with_the_runs_members(
    written: tuple[Path, int], tmp_path: Path
) -> None:
    fragments_dir, pid = written
    merged = fragments.merge_run(_copy(fragments_dir, tmp_path, "a"), pid, 3, "-m prog")
    assert merged is not None
    spliced_dir = _copy(fragments_dir, tmp_path, "b")
    spliced = fragments.finish_run(spliced_dir, pid, 3, "-m prog")
    assert isinstance(spliced, str)
    assert not os.path.exists(spliced_dir), "the fragment directory was left"
    assert spliced.isascii()
    assert json.loads(spliced) == json.loads(profile_text(merged))
    doc = json.loads(spliced)
    assert (doc["program"], doc["exit_status"]) == ("-m prog", 3)
    (row,) = doc["processes"]
    assert (row["pid"], row["program"], row["exit_status"]) == (pid, "-m prog", 3)
    assert row["argv"] == ["prog.py", "a"] and row["samples"] == doc["samples"] > 0
    assert ("max_footprint_mb" in row) == doc["memory_profiled"]
    # A file written from it reads as a valid profile.
    path = tmp_path / "run.json"
    path.write_text(spliced, encoding="utf-8")
    assert load_profile(path)["processes"] == doc["processes"]


def _merged(fragments_dir: str, pid: int, processes: int) -> None:
    merged = fragments.finish_run(fragments_dir, pid, 0, "prog.py")
    assert isinstance(merged, dict), "a run of several processes taken for one"
    assert [p["pid"] for p in merged["processes"]][:1] == [pid]
    assert len(merged["processes"]) == processes
    assert not os.path.exists(fragments_dir)


def test_other_runs_are_left_to_the_merge(written: tuple[Path, int], tmp_path: Path) -> None:
    fragments_dir, pid = written
    (name,) = os.listdir(fragments_dir)
    # A second process (a child), an image exec'd later (same pid), a process that could not
    # be profiled: each makes it a run of several.
    for i, other in enumerate([f"process-{pid + 1}-00000001.json", f"process-{pid}-00000002.json"]):
        d = _copy(fragments_dir, tmp_path, f"two-{i}")
        shutil.copy(os.path.join(d, name), os.path.join(d, other))
        _merged(d, pid, 2)
    d = _copy(fragments_dir, tmp_path, "unprofiled")
    note = {"pid": pid + 5, "program": "other", "not_profiled": "another Python"}
    Path(d, f"unprofiled-{pid + 5}.json").write_text(json.dumps(note), encoding="utf-8")
    _merged(d, pid, 2)
    # The program's process is not the one that wrote it: the program left nothing.
    d = _copy(fragments_dir, tmp_path, "other-pid")
    assert fragments.finish_run(d, pid + 1, 0, "prog.py") is None
    # A program read from stdin gets its source lines from the run.
    d = _copy(fragments_dir, tmp_path, "sources")
    assert isinstance(fragments.finish_run(d, pid, 0, "-", {"<stdin>": ["pass"]}), dict)


@pytest.mark.parametrize("cut", ["head", "row", "tail"])
def test_a_damaged_fragment_is_left_to_the_merge(
    written: tuple[Path, int], tmp_path: Path, cut: str
) -> None:
    fragments_dir, pid = written
    d = _copy(fragments_dir, tmp_path, "damaged")
    (path,) = Path(d).glob("process-*.json")
    text = path.read_text(encoding="utf-8")
    # Cut in its head, right after a thread's row (a "}" past what is decoded), in its stacks.
    at = {"head": 40, "row": text.index("}", text.index('"threads":[')) + 1, "tail": -3}[cut]
    path.write_text(text[:at], encoding="utf-8")
    # Nothing to rebuild it from (no journal): the merge finds no profile of the program.
    assert fragments.finish_run(d, pid, 0, "prog.py") is None
