"""Memory accuracy against ground truth the programs measure themselves, over repeated runs:
mixed-size per-line attribution (tests/programs/mem_mix_truth.py) and leak precision and
recall (tests/programs/mem_leak_suite.py). Prints the per-line error spread and the leak
confusion counts; the default rate in docs/memory-profiling.md was chosen from these.

usage: python bench/accuracy/memory_accuracy.py [--runs N] [--rate SIZE]
(run with the interpreter spyglass is installed in; needs a C compiler for the native case)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MIX = ROOT / "tests" / "programs" / "mem_mix_truth.py"
SUITE = ROOT / "tests" / "programs" / "mem_leak_suite.py"
EXT = ROOT / "tests" / "ext" / "alloc_paths.c"
MARKS = ("TINY", "SMALL", "MEDIUM", "KEEP", "INTS", "BIG", "HUGE")
CASES = {
    "import": False,
    "import_then_little": False,
    "temporaries": False,
    "build_then_drop": False,
    "cache_once": False,
    "cache_filled_by_requests": False,
    "built_in_threads": False,
    "build_at_end": False,
    "cyclic_garbage": False,
    "global_growth": True,
    "small_leak_big_churn": True,
    "thread_leak": True,
    "native_leak": True,
    "lone_line_leak": True,
    "leak_then_idle": True,
    "leak_in_quiet_loop": True,
}


def spyglass(out: Path, rate: str | None, *target: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "spyglass", "run", "--no-report", "-o", str(out)]
    cmd += ["--memory-window", rate] if rate else []
    done = subprocess.run([*cmd, *target], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd + list(target))} failed ({done.returncode}):\n{done.stderr}")
    return done


def line_of(path: Path, mark: str) -> int:
    lines = path.read_text().splitlines()
    return next(n for n, text in enumerate(lines, 1) if mark in text)


def line_entry(profile: dict, path: Path, lineno: int) -> dict:
    entry = profile["files"].get(str(path), {"lines": []})
    return next((x for x in entry["lines"] if x["lineno"] == lineno), {})


def mix(runs: int, rate: str | None, work: Path) -> None:
    errors: dict[str, list[float]] = {m: [] for m in MARKS}
    shares: dict[str, float] = {}
    samples = []
    ints = subprocess.run([sys.executable, str(MIX), "--calibrate"], capture_output=True, text=True)
    for k in range(runs):
        out, truth_file = work / f"mix{k}.json", work / f"truth{k}.json"
        spyglass(out, rate, str(MIX), str(truth_file), ints.stdout.strip())
        profile, truth = json.loads(out.read_text()), json.loads(truth_file.read_text())
        total = sum(truth.values())
        samples.append(profile["mem_samples"])
        for mark in MARKS:
            key = mark.lower()
            got = line_entry(profile, MIX, line_of(MIX, f"LINE_{mark}")).get("mem_alloc_mb", 0)
            errors[mark].append(100 * (got * 2**20 / truth[key] - 1))
            shares[mark] = truth[key] / total
    print(f"mixed sizes, {runs} runs, {statistics.mean(samples):.0f} samples a run")
    print(f"{'line':8} {'share':>6} {'mean err':>9} {'sd':>6} {'worst':>7}")
    for mark in MARKS:
        e = errors[mark]
        sd = statistics.stdev(e) if len(e) > 1 else 0.0
        worst = max(e, key=abs)
        print(f"{mark:8} {shares[mark]:6.1%} {statistics.mean(e):+8.1f}% {sd:5.1f}% {worst:+6.1f}%")


def leaks(runs: int, rate: str | None, work: Path) -> None:
    ext = work / "ext"
    ext.mkdir(exist_ok=True)
    target = ext / f"alloc_paths{sysconfig.get_config_var('EXT_SUFFIX')}"
    include = sysconfig.get_paths()["include"]
    cc = ["cc", "-O1", "-fno-builtin", "-shared", "-fPIC", f"-I{include}"]
    subprocess.run([*cc, str(EXT), "-o", str(target)], check=True)
    tp = fp = fn = tn = 0
    for k in range(runs):
        for case, leaking in CASES.items():
            out = work / f"leak-{case}-{k}.json"
            spyglass(out, rate, str(SUITE), case, str(ext))
            profile = json.loads(out.read_text())
            found = [x for e in profile["files"].values() for x in e.get("leaks") or []]
            extra = found[1:] if leaking else found
            if extra:
                lines = sorted(int(x["lineno"]) for x in extra)
                print(f"  {case} (run {k + 1}): also reported as leaks: lines {lines}")
            if leaking:
                tp += len(found) == 1
                fn += len(found) == 0
                fp += max(0, len(found) - 1)
            else:
                fp += len(found)
                tn += len(found) == 0
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print(f"leaks, {runs} runs of {len(CASES)} cases: {tp} found, {fn} missed, {fp} false")
    print(f"precision {precision:.2f}, recall {recall:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rate", default=None, help="--memory-window for spyglass (default: its own)")
    ap.add_argument("--only-leaks", action="store_true", help="the leak suite alone")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if not args.only_leaks:
            mix(args.runs, args.rate, Path(tmp))
        leaks(args.runs, args.rate, Path(tmp))


if __name__ == "__main__":
    main()
