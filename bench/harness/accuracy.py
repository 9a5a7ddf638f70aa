"""Accuracy against ground truth the programs in bench/accuracy/ measure themselves.

Each experiment: a plain calibration run fixes the amount of work (so every profiler runs
the same program), then each repetition runs the program plainly (the ground truth) and
under each profiler, in a shuffled order. The profiled runs' self-measurements are kept
too, but the truth a profiler is compared with is the median over the plain runs: what
the program does when nobody is watching.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from . import parsers
from .context import ACCURACY_DIR, Context
from .env import log
from .profilers import BY_KEY

FRACTIONS = [0.1, 0.3, 0.5, 0.7, 0.9]
SPLIT_FUNCS = ("py_work", "native_work")


def _read(path: Path) -> dict | None:
    try:
        with path.open() as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _run(ctx: Context, p, script: Path, extra: dict, timeout: float, tag: str):
    truth_file = ctx.tmp / f"truth-{ctx.counter + 1:05d}.json"
    extra = {**extra, "BENCH_TRUTH_FILE": str(truth_file)}
    record, out = ctx.run(p, script, extra, timeout, tag)
    truth = _read(truth_file)
    truth_file.unlink(missing_ok=True)
    if record["ok"] and truth is None:
        record["ok"], record["reason"] = False, "program wrote no ground truth"
    record["truth"] = truth
    for k in ("stdout", "stderr"):
        record.pop(k, None)
    return record, out


def _calibrate(ctx: Context, script: Path, extra: dict, tag: str) -> dict:
    record, out = _run(ctx, BY_KEY["none"], script, {**extra, "BENCH_MODE": "calibrate"}, 600, tag)
    ctx.done(out)
    if not record["ok"]:
        raise RuntimeError(f"{script.name} calibration failed: {record['reason']}")
    return record["truth"]


def split_metric(parsed: parsers.Parsed) -> dict:
    if parsed.split is None:
        raise parsers.NotApplicable(parsed.split_note)
    per_function, py_total, all_total = {}, 0.0, 0.0
    for name in SPLIT_FUNCS:
        py, nat = parsed.split.get(name, (0.0, 0.0))
        per_function[name] = py / (py + nat) if py + nat > 0 else None
        py_total, all_total = py_total + py, all_total + py + nat
    if all_total <= 0:
        raise ValueError("no time attributed to py_work/native_work")
    return {"value": py_total / all_total, "per_function": per_function}


def bias_metric(parsed: parsers.Parsed) -> dict:
    call = parsed.self_time.get("call_loop", 0.0) + parsed.self_time.get("helper", 0.0)
    inline = parsed.self_time.get("inline_loop", 0.0)
    if call + inline <= 0:
        raise ValueError("no time attributed to call_loop/helper/inline_loop")
    return {"value": call / (call + inline)}


def threads_metric(parsed: parsers.Parsed) -> dict:
    if parsed.total <= 0:
        raise ValueError("profile reports no time at all")
    return {"value": parsed.self_time.get("worker", 0.0) / parsed.total}


def short_threads_metric(parsed: parsers.Parsed) -> dict:
    if parsed.total <= 0:
        raise ValueError("profile reports no time at all")
    return {"value": parsed.self_time.get("slow_digest", 0.0) / parsed.total}


def _top(parsed: parsers.Parsed, n: int = 5) -> dict:
    """The functions of the program with the largest shares (for diagnosis)."""
    if parsed.total <= 0:
        return {}
    best = sorted(parsed.self_time.items(), key=lambda kv: -kv[1])[:n]
    return {name: t / parsed.total for name, t in best}


def _experiment(ctx, script: Path, extra: dict, metric, timeout: float, rep: int, rng) -> list:
    runs = []
    order = list(ctx.profilers)
    rng.shuffle(order)
    for position, p in enumerate(order):
        base = {"rep": rep, "profiler": p.key, "position": position}
        if not p.reports_cpu:
            runs.append({**base, "ok": False, "na": parsers.NO_CPU_REASON.get(p.key, "n/a")})
            continue
        if p.key in ctx.unavailable:
            runs.append({**base, "ok": False, "skipped": True, "reason": ctx.unavailable[p.key]})
            continue
        record, out = _run(ctx, p, script, extra, timeout, script.stem)
        record.update(base)
        if record["ok"] and out is not None:
            try:
                parsed = parsers.parse(p.key, out, script.name)
                record["reported"] = metric(parsed)
                record["reported"]["top"] = _top(parsed)
            except parsers.NotApplicable as exc:
                record["na"] = str(exc)
            except (ValueError, KeyError, TypeError, OSError) as exc:
                record["ok"], record["reason"] = False, f"cannot read the profile: {exc}"
        elif record["ok"] and p.key != "none":
            record["ok"], record["reason"] = False, "wrote no profile"
        ctx.done(out)
        if not record["ok"]:
            log(f"accuracy: {script.name} under {p.key} failed: {record.get('reason')}")
        runs.append(record)
    return runs


def measure(ctx: Context, reps: int, total_s: float, seed: int) -> dict:
    rng = random.Random(seed + 2)
    timeout = 15.0 + 10.0 * (total_s + 0.5)
    base = {"BENCH_TOTAL_S": str(total_s)}
    split_script = ACCURACY_DIR / "split.py"
    bias_script = ACCURACY_DIR / "function_bias.py"
    threads_script = ACCURACY_DIR / "thread_share.py"
    short_script = ACCURACY_DIR / "short_threads.py"
    result: dict = {"repetitions": reps, "total_s": total_s}

    log("accuracy: calibrating")
    c = _calibrate(ctx, split_script, {**base, "BENCH_PY_SHARE": "0.5"}, "split")
    split_env = {"BENCH_PY_UNITS": str(c["py_units"]), "BENCH_NATIVE_UNITS": str(c["native_units"])}
    result["split"] = {"calibration": c, "runs": []}
    bias_env = {}
    result["bias"] = {}
    for f in FRACTIONS:
        c = _calibrate(ctx, bias_script, {**base, "BENCH_FRACTION": str(f)}, "bias")
        bias_env[f] = {"BENCH_N_CALL": str(c["n_call"]), "BENCH_N_INLINE": str(c["n_inline"])}
        result["bias"][str(f)] = {"calibration": c, "runs": []}
    c = _calibrate(ctx, threads_script, base, "threads")
    threads_env = {"BENCH_ITERATIONS": str(c["iterations"])}
    result["threads"] = {"calibration": c, "runs": []}
    c = _calibrate(ctx, short_script, base, "short_threads")
    short_env = {"BENCH_REQUESTS": str(c["requests"])}
    result["short_threads"] = {"calibration": c, "runs": []}

    for rep in range(reps):
        log(f"accuracy: rep {rep + 1}/{reps}: python/native split")
        result["split"]["runs"] += _experiment(
            ctx, split_script, split_env, split_metric, timeout, rep, rng
        )
        for f in FRACTIONS:
            log(f"accuracy: rep {rep + 1}/{reps}: function bias, call_loop share {f}")
            result["bias"][str(f)]["runs"] += _experiment(
                ctx, bias_script, bias_env[f], bias_metric, timeout, rep, rng
            )
        log(f"accuracy: rep {rep + 1}/{reps}: threads")
        result["threads"]["runs"] += _experiment(
            ctx, threads_script, threads_env, threads_metric, timeout, rep, rng
        )
        log(f"accuracy: rep {rep + 1}/{reps}: short threads")
        result["short_threads"]["runs"] += _experiment(
            ctx, short_script, short_env, short_threads_metric, timeout, rep, rng
        )
    return result
