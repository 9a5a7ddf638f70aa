"""Summaries of the raw runs (the numbers the markdown shows), computed from the results
file alone so that a report can be regenerated from it."""

from __future__ import annotations

import statistics
from collections import defaultdict


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _by(runs: list[dict], *keys: str) -> dict:
    out: dict = defaultdict(list)
    for r in runs:
        out[tuple(r.get(k) for k in keys)].append(r)
    return out


def _failure(runs: list[dict]) -> str | None:
    reasons = [r.get("reason") or r.get("na") for r in runs if not r.get("ok")]
    return max(set(reasons), key=reasons.count) if reasons else None


def overhead(result: dict, profilers: list[str]) -> dict:
    """Per workload and profiler: median, min, max of wall(profiler) / wall(plain) over
    repetitions (paired within a repetition); plus the median over workloads."""
    table: dict = {}
    for name, entry in result["workloads"].items():
        row = {}
        by = _by(entry["runs"], "rep", "profiler")
        reps = sorted({r["rep"] for r in entry["runs"]})
        plain = [by[(k, "none")][0] for k in reps if by.get((k, "none"))]
        for key in profilers:
            ratios, runs, sizes = [], [], []
            for k in reps:
                for r in by.get((k, key), []):
                    runs.append(r)
                    base = by.get((k, "none"), [{}])[0]
                    if r.get("ok") and base.get("ok"):
                        ratios.append(r["wall_s"] / base["wall_s"])
                    if r.get("ok") and r.get("output_bytes") is not None:
                        sizes.append(r["output_bytes"])
            cell = {"n": len(ratios), "runs": len(runs), "failure": _failure(runs)}
            if ratios:
                cell.update(median=median(ratios), min=min(ratios), max=max(ratios))
            if sizes:
                cell["output_bytes"] = median(sizes)
            row[key] = cell
        walls = [r["wall_s"] for r in plain if r.get("ok")]
        row["_plain_wall_s"] = median(walls)
        row["_calibration"] = entry["calibration"]
        table[name] = row
    overall = {}
    for key in profilers:
        meds = [row[key]["median"] for row in table.values() if "median" in row[key]]
        overall[key] = {"median": median(meds), "n": len(meds), "of": len(table)}
    return {"workloads": table, "overall": overall}


def startup(result: dict, profilers: list[str]) -> dict:
    by = _by(result["runs"], "rep", "profiler")
    reps = sorted({r["rep"] for r in result["runs"]})
    out = {}
    plain = [by[(k, "none")][0]["wall_s"] for k in reps if by[(k, "none")][0].get("ok")]
    out["none"] = {"plain_median_s": median(plain)}
    for key in profilers:
        if key == "none":
            continue
        diffs, runs = [], []
        for k in reps:
            r, base = by[(k, key)][0], by[(k, "none")][0]
            runs.append(r)
            if r.get("ok") and base.get("ok"):
                diffs.append(r["wall_s"] - base["wall_s"])
        cell = {"n": len(diffs), "failure": _failure(runs)}
        if diffs:
            cell.update(median=median(diffs), min=min(diffs), max=max(diffs))
        out[key] = cell
    return out


def accuracy(runs: list[dict], truth_key: str, profilers: list[str]) -> dict:
    """Truth: median of the plain runs' self-measured ``truth_key``. Per profiler: median
    reported value and median absolute / signed error in percentage points."""
    plain = [r["truth"][truth_key] for r in runs if r["profiler"] == "none" and r.get("ok")]
    truth = median(plain)
    out: dict = {"truth": truth, "truth_runs": plain, "profilers": {}}
    for key in profilers:
        if key == "none":
            continue
        mine = [r for r in runs if r["profiler"] == key]
        good = [r for r in mine if r.get("ok") and "reported" in r]
        cell: dict = {"n": len(good), "runs": len(mine)}
        na = [r["na"] for r in mine if r.get("na")]
        if na:
            cell["na"] = na[0]
        elif not good:
            cell["failure"] = _failure(mine)
        if good and truth is not None:
            values = [r["reported"]["value"] for r in good]
            errors = [100.0 * (v - truth) for v in values]
            cell.update(
                reported=median(values),
                error_pp=median([abs(e) for e in errors]),
                signed_error_pp=median(errors),
            )
            per_fn: dict = defaultdict(list)
            for r in good:
                for fn, v in r["reported"].get("per_function", {}).items():
                    if v is not None:
                        per_fn[fn].append(v)
            if per_fn:
                cell["per_function"] = {fn: median(v) for fn, v in per_fn.items()}
        out["profilers"][key] = cell
    return out


def summarize(results: dict) -> dict:
    keys = [p["key"] for p in results["profilers"]]
    summary: dict = {}
    if "overhead" in results:
        summary["overhead"] = overhead(results["overhead"], keys)
    if "startup" in results:
        summary["startup"] = startup(results["startup"], keys)
    acc = results.get("accuracy")
    if acc:
        summary["split"] = accuracy(acc["split"]["runs"], "python_share", keys)
        summary["bias"] = {
            f: accuracy(entry["runs"], "call_share", keys) for f, entry in acc["bias"].items()
        }
        summary["threads"] = accuracy(acc["threads"]["runs"], "worker_share", keys)
    return summary
