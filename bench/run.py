#!/usr/bin/env python3
"""Benchmark spyglass against Scalene, py-spy, pyinstrument, memray and cProfile.

    python bench/run.py --quick                 # a few minutes: subset, 3 repetitions
    python bench/run.py --full                  # everything, 5 repetitions (< ~1 hour)
    python bench/run.py --only-harness-smoke    # CI: plain python + both spyglass rows, tiny
    python bench/run.py --only-instructions     # start-up counted in instructions (callgrind)
    python bench/run.py --report FILE.json      # re-render the markdown of a results file

Creates or reuses bench/.venv, installs the peers (bench/requirements.txt) and spyglass
(from this repository) into it, runs the overhead, start-up and accuracy measurements and
writes bench/results/<date>-<mode>.json (every raw timing) and .md (the tables).
See bench/README.md for the method.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import accuracy, costs, env, footprint, instructions, overhead, report
from harness.context import Context
from harness.profilers import BY_KEY, PROFILERS, command_template

MODES = {
    "quick": {
        "reps": 3,
        "duration": 0.5,
        "workloads": overhead.QUICK_WORKLOADS,
        "startup_reps": 7,
        "startup_scripts": overhead.STARTUP_SCRIPTS,
        "accuracy_reps": 1,
        "accuracy_s": 1.0,
        "cost_reps": 3,
        "footprint_reps": 1,
        "footprint_s": 10.0,
        "instruction_reps": 1,
    },
    "full": {
        "reps": 5,
        "duration": 2.0,
        "workloads": overhead.WORKLOADS,
        "startup_reps": 15,
        "startup_scripts": overhead.STARTUP_SCRIPTS,
        "accuracy_reps": 3,
        "accuracy_s": 1.5,
        "cost_reps": 9,
        "footprint_reps": 1,
        "footprint_s": 60.0,
        "instruction_reps": 3,
    },
    "smoke": {
        "reps": 1,
        "duration": 0.2,
        "workloads": ["mdp"],
        "startup_reps": 1,
        "startup_scripts": ("empty", "children"),
        "accuracy_reps": 0,
        "accuracy_s": 0.0,
        "cost_reps": 1,
        "footprint_reps": 1,
        "footprint_s": 1.0,
        "instruction_reps": 0,
    },
    # Start-up in instructions alone (bench/harness/instructions.py): minutes, not an hour.
    "instructions": {
        "reps": 0,
        "duration": 0.0,
        "workloads": [],
        "startup_reps": 0,
        "startup_scripts": (),
        "accuracy_reps": 0,
        "accuracy_s": 0.0,
        "cost_reps": 0,
        "footprint_reps": 0,
        "footprint_s": 0.0,
        "instruction_reps": 3,
    },
}
FULL_MARK = "this spyglass has no memory profiling: the full row runs the same profiler as CPU-only"
SMOKE_PROFILERS = ["none", "spyglass-cpu", "spyglass-full"]


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="mode", action="store_const", const="quick")
    mode.add_argument("--full", dest="mode", action="store_const", const="full")
    mode.add_argument("--only-harness-smoke", dest="mode", action="store_const", const="smoke")
    mode.add_argument(
        "--only-instructions", dest="mode", action="store_const", const="instructions"
    )
    mode.add_argument("--report", metavar="JSON", help="re-render the markdown of a results file")
    ap.add_argument("--reps", type=int, help="repetitions (overrides the mode's)")
    ap.add_argument("--duration", type=float, help="seconds of work per workload run")
    ap.add_argument("--workloads", help="comma-separated subset of workloads")
    ap.add_argument("--profilers", help="comma-separated subset of profiler keys")
    ap.add_argument("--no-accuracy", action="store_true", help="skip the accuracy tests")
    ap.add_argument("--seed", type=int, default=20231023, help="seed of the run orders")
    ap.add_argument("--python", default=sys.executable, help="interpreter for a new venv")
    ap.add_argument(
        "--skip-install", action="store_true", help="use bench/.venv as it is (no pip at all)"
    )
    ap.add_argument(
        "--keep-profiles",
        action="store_true",
        help="keep every profile written under bench/results/tmp/",
    )
    ap.add_argument("--out-dir", type=Path, help="where results go (default bench/results)")
    args = ap.parse_args(argv)
    if not args.mode and not args.report:
        args.mode = "quick"
    return args


def prepare(args: argparse.Namespace, selected: list) -> tuple[dict, dict]:
    """Set up bench/.venv; return install status and {profiler key: why unavailable}."""
    env.ensure_venv(args.python)
    unavailable: dict[str, str] = {}
    if args.skip_install:
        peers = {"ok": True, "action": "skipped (--skip-install)"}
    elif args.mode in ("smoke", "instructions"):
        peers = {"ok": True, "action": f"not needed for the {args.mode} run"}
    else:
        peers = env.install_peers()
    spyglass = env.install_spyglass(reinstall=not args.skip_install)
    for p in selected:
        if p.spyglass and not spyglass["ok"]:
            unavailable[p.key] = "spyglass unavailable: " + spyglass["reason"]
        elif p.package and not p.spyglass and not peers["ok"]:
            unavailable[p.key] = "peer install failed: " + peers["reason"]
    if spyglass["ok"]:
        env.log("spyglass: ok")
    else:
        env.log(f"spyglass: unavailable: {spyglass['reason']}")
    return {"peers": peers, "spyglass": spyglass}, unavailable


def output_paths(out_dir: Path, started: datetime.datetime, mode: str) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{started:%Y-%m-%d}-{mode}"
    k = 1
    while (out_dir / f"{stem}.json").exists():
        k += 1
        stem = f"{started:%Y-%m-%d}-{mode}-{k}"
    return out_dir / f"{stem}.json", out_dir / f"{stem}.md"


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.report:
        path = Path(args.report)
        results = json.loads(path.read_text())
        path.with_suffix(".md").write_text(report.render(results))
        print(path.with_suffix(".md"))
        return 0
    cfg = MODES[args.mode]
    keys = args.profilers.split(",") if args.profilers else [p.key for p in PROFILERS]
    if args.mode in ("smoke", "instructions"):
        keys = list(SMOKE_PROFILERS)
    if "none" not in keys:
        keys.insert(0, "none")
    selected = [BY_KEY[k] for k in keys]
    workloads = args.workloads.split(",") if args.workloads else cfg["workloads"]
    reps = args.reps or cfg["reps"]
    duration = args.duration or cfg["duration"]

    started, t0 = datetime.datetime.now(), time.perf_counter()
    install, unavailable = prepare(args, selected)
    results: dict = {
        "format": "spyglass-bench-results",
        "version": 1,
        "mode": args.mode,
        "environment": env.describe(started),
        "install": install,
        "config": {
            "seed": args.seed,
            "repetitions": reps,
            "duration_s": duration,
            "workloads": workloads,
            "argv": argv,
        },
    }
    mark = None
    has_memory = bool(install["spyglass"].get("has_memory_profiling"))
    if install["spyglass"].get("ok") and not has_memory:
        mark = FULL_MARK
    if not install["spyglass"].get("ok"):
        mark = "spyglass full: the same command without --cpu-only (memory and copies on)"
    versions = results["environment"]["versions"]
    results["profilers"] = [
        {
            "key": p.key,
            "label": p.label,
            "command": command_template(p),
            "version": versions.get(p.package) if p.package else results["environment"]["python"],
            "unavailable": unavailable.get(p.key),
            "note": p.note,
            "mark": mark if p.key == "spyglass-full" else None,
        }
        for p in selected
    ]
    out_dir = args.out_dir or env.BENCH_DIR / "results" / (
        "tmp/smoke" if args.mode == "smoke" else ""
    )
    ctx = Context(
        python=env.venv_python(),
        bindir=env.VENV_DIR / "bin",
        tmp=env.BENCH_DIR / "results" / "tmp" / f"run-{started:%Y%m%d-%H%M%S}",
        profilers=selected,
        unavailable=unavailable,
        keep_profiles=args.keep_profiles,
        check_memory=has_memory,
    )
    try:
        if workloads:
            results["overhead"] = overhead.measure(ctx, workloads, reps, duration, args.seed)
        if cfg["startup_reps"]:
            results["startup"] = overhead.startup(
                ctx, cfg["startup_reps"], args.seed, tuple(cfg["startup_scripts"])
            )
        if cfg["footprint_s"]:
            results["footprint"] = footprint.measure(
                ctx, cfg["footprint_reps"], cfg["footprint_s"], args.seed
            )
        if cfg["instruction_reps"] and install["spyglass"].get("ok"):
            results["instructions"] = instructions.measure(ctx, cfg["instruction_reps"])
        if cfg["cost_reps"] and install["spyglass"].get("ok"):
            results["costs"] = costs.measure(ctx.python, cfg["cost_reps"], args.mode == "smoke")
        if cfg["accuracy_reps"] and not args.no_accuracy:
            results["accuracy"] = accuracy.measure(
                ctx, cfg["accuracy_reps"], cfg["accuracy_s"], args.seed
            )
    finally:
        ctx.clean()
    results["elapsed_s"] = time.perf_counter() - t0
    results["loadavg_at_end"] = env.loadavg()
    markdown = report.render(results)
    json_path, md_path = output_paths(out_dir, started, args.mode)
    json_path.write_text(json.dumps(results, indent=1) + "\n")
    md_path.write_text(markdown)
    env.log(f"wrote {json_path} and {md_path} ({results['elapsed_s'] / 60:.1f} min)")
    print(markdown)
    if args.mode == "smoke":
        return smoke_verdict(results)
    return 0


def smoke_verdict(results: dict) -> int:
    """The harness ran end to end: plain python and both spyglass rows on the workload and
    on the start-up scripts (per-child included), with valid profiles. Nothing about speed
    or size is asserted."""
    runs = [r for w in results["overhead"]["workloads"].values() for r in w["runs"]]
    runs += results.get("startup", {}).get("runs", [])
    runs += [{**r, "script": "wide"} for r in results.get("footprint", {}).get("runs", [])]
    calib_ok = all(w["calibration"]["ok"] for w in results["overhead"]["workloads"].values())
    if not results.get("costs", {}).get("ok"):
        print(f"harness smoke: FAILED (cost model): {results.get('costs', {}).get('reason')}")
        return 1
    missing = [
        f"{key}/{r.get('script', 'mdp')}"
        for key in SMOKE_PROFILERS
        for r in runs
        if r["profiler"] == key and not r["ok"]
    ]
    missing += [key for key in SMOKE_PROFILERS if not any(r["profiler"] == key for r in runs)]
    if calib_ok and not missing:
        print(
            "harness smoke: ok (plain python, spyglass CPU-only and full ran the workload and "
            "the start-up scripts; spyglass wrote valid profiles; the cost model ran)"
        )
        return 0
    why = [r.get("reason") for r in runs if not r["ok"]] or ["workload calibration failed"]
    print(f"harness smoke: FAILED ({', '.join(missing) or 'calibration'}): {why[0]}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
