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
    """The most frequent failure reason, preferring runs that were actually made."""
    failed = [r for r in runs if not r.get("ok")]
    made = [r for r in failed if not r.get("skipped")]
    reasons = [r.get("reason") or r.get("na") for r in (made or failed)]
    return max(set(reasons), key=reasons.count) if reasons else None


def overhead(result: dict, profilers: list[str]) -> dict:
    """Per workload and profiler: the wall time of each run divided by the median wall
    time of the plain runs of that workload; median, min and max of these ratios over
    repetitions; plus the median over workloads."""
    table: dict = {}
    for name, entry in result["workloads"].items():
        row = {}
        plain_runs = [r for r in entry["runs"] if r["profiler"] == "none" and r.get("ok")]
        base = median([r["wall_s"] for r in plain_runs])
        cpu_base = median([r["cpu_s"] for r in plain_runs if r.get("cpu_s")])
        for key in profilers:
            runs = [r for r in entry["runs"] if r["profiler"] == key]
            ok = [r for r in runs if r.get("ok")]
            ratios = [r["wall_s"] / base for r in ok] if base else []
            sizes = [r["output_bytes"] for r in ok if r.get("output_bytes") is not None]
            cell = {"n": len(ratios), "runs": len(runs), "failure": _failure(runs)}
            if ratios:
                cell.update(median=median(ratios), min=min(ratios), max=max(ratios))
                cpu = [r["cpu_s"] / cpu_base for r in ok if r.get("cpu_s")] if cpu_base else []
                if cpu:
                    cell.update(cpu_ratio=median(cpu), cpu_min=min(cpu), cpu_max=max(cpu))
            if sizes:
                cell["output_bytes"] = median(sizes)
            if any(r.get("timed_out") or "timed out" in (r.get("reason") or "") for r in runs):
                cell["timed_out"] = True
            row[key] = cell
        row["_plain_wall_s"] = base
        row["_calibration"] = entry["calibration"]
        table[name] = row
    overall = {}
    for key in profilers:
        meds = [row[key]["median"] for row in table.values() if "median" in row[key]]
        cpu = [row[key]["cpu_ratio"] for row in table.values() if "cpu_ratio" in row[key]]
        overall[key] = {
            "median": median(meds),
            "cpu_ratio": median(cpu),
            "n": len(meds),
            "of": len(table),
        }
    return {"workloads": table, "overall": overall}


def startup(result: dict, profilers: list[str]) -> dict:
    """Per start-up script and profiler: median, min, max over repetitions of
    (profiled − plain) wall time, paired within a repetition."""
    out: dict = {}
    for script in result.get("scripts", ["empty"]):
        runs = [r for r in result["runs"] if r.get("script", "empty") == script]
        by = _by(runs, "rep", "profiler")
        reps = sorted({r["rep"] for r in runs})
        plain = {k: by[(k, "none")][0] for k in reps if by.get((k, "none"))}
        per: dict = {
            "none": {"plain_median_s": median([r["wall_s"] for r in plain.values() if r.get("ok")])}
        }
        for key in profilers:
            if key == "none":
                continue
            diffs, mine = [], []
            for k in reps:
                for r in by.get((k, key), []):
                    mine.append(r)
                    base = plain.get(k, {})
                    if r.get("ok") and base.get("ok"):
                        diffs.append(r["wall_s"] - base["wall_s"])
            cell = {"n": len(diffs), "runs": len(mine), "failure": _failure(mine)}
            if diffs:
                cell.update(median=median(diffs), min=min(diffs), max=max(diffs))
            per[key] = cell
        out[script] = per
    return out


def per_child(result: dict, profilers: list[str]) -> dict | None:
    """The start-up cost of one child process, from the `children` script (which starts
    ``result["children"]`` `python -c pass` children) and the empty one: per repetition,
    ((profiled − plain) wall time of `children` − the same of `empty`) ÷ children, so that
    the profiler's own start-up in the parent is left out; median, min, max over repetitions.
    Also what one child costs plain python: (children − empty) ÷ children."""
    n = result.get("children")
    if not n or not {"children", "empty"} <= set(result.get("scripts", [])):
        return None
    runs = [r for r in result["runs"] if r.get("script") in ("children", "empty")]
    by = _by(runs, "rep", "script", "profiler")
    reps = sorted({r["rep"] for r in runs})

    def wall(rep: int, script: str, key: str) -> float | None:
        found = by.get((rep, script, key))
        return found[0]["wall_s"] if found and found[0].get("ok") else None

    def one_child(rep: int, key: str) -> float | None:
        w = [wall(rep, s, k) for s in ("children", "empty") for k in (key, "none")]
        if any(v is None for v in w):
            return None
        if key == "none":
            return (w[0] - w[2]) / n
        return ((w[0] - w[1]) - (w[2] - w[3])) / n

    plain = [v for v in (one_child(k, "none") for k in reps) if v is not None]
    out: dict = {"children": n, "none": {"plain_per_child_s": median(plain)}}
    for key in profilers:
        if key == "none":
            continue
        mine = [r for r in runs if r["profiler"] == key]
        values = [v for v in (one_child(k, key) for k in reps) if v is not None]
        cell = {"n": len(values), "runs": len(reps), "failure": _failure(mine)}
        if values:
            cell.update(median=median(values), min=min(values), max=max(values))
        out[key] = cell
    return out


PROFILE_SIZE_WORKLOAD = "mdp"
PROFILE_SIZE_GOAL_BYTES = 32 * 1024  # spyglass (full) on mdp


def profile_size(overhead_summary: dict, profilers: list[str]) -> dict | None:
    """Median size of the profile each profiler wrote for the mdp workload (None: none)."""
    row = overhead_summary["workloads"].get(PROFILE_SIZE_WORKLOAD)
    if row is None:
        return None
    return {
        "workload": PROFILE_SIZE_WORKLOAD,
        "goal_bytes": PROFILE_SIZE_GOAL_BYTES,
        "bytes": {k: row[k].get("output_bytes") for k in profilers if k != "none"},
    }


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
            own = [
                100.0 * abs(r["reported"]["value"] - r["truth"][truth_key])
                for r in good
                if r.get("truth") and truth_key in r["truth"]
            ]
            cell.update(
                reported=median(values),
                error_pp=median([abs(e) for e in errors]),
                signed_error_pp=median(errors),
                error_own_run_pp=median(own),
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


def own_threads(result: dict, profilers: list[str]) -> dict | None:
    """Per workload and profiler: the CPU time of the threads a profiler adds to the
    program's process (named as no thread of the plain runs is), as a share of the plain
    runs' median CPU time; median, min and max over repetitions, and each added thread
    name's median. None for a results file from before the driver reported threads."""
    table: dict = {}
    for name, entry in result["workloads"].items():
        plain = [r for r in entry["runs"] if r["profiler"] == "none" and r.get("ok")]
        if not any("threads_cpu_s" in r for r in plain):
            continue
        base = median([r["cpu_s"] for r in plain if r.get("cpu_s")])
        if not base:
            continue
        plain_names = {n for r in plain for n in r.get("threads_cpu_s", {})}
        row = {}
        for key in profilers:
            if key == "none":
                continue
            runs = [r for r in entry["runs"] if r["profiler"] == key and "threads_cpu_s" in r]
            added = [
                {n: s for n, s in r["threads_cpu_s"].items() if n not in plain_names} for r in runs
            ]
            # A profiler that adds no thread (py-spy reads the program from a process of
            # its own) has no row here; nor has a thread that used no CPU.
            names = sorted({n for a in added for n, cpu_s in a.items() if cpu_s > 0})
            if not names:
                continue
            shares = [sum(a.values()) / base for a in added]
            row[key] = {
                "median": median(shares),
                "min": min(shares),
                "max": max(shares),
                "n": len(shares),
                "by_name": {n: median([a.get(n, 0.0) / base for a in added]) for n in names},
            }
        table[name] = row
    if not table:
        return None
    overall = {}
    for key in profilers:
        meds = [row[key]["median"] for row in table.values() if key in row]
        if meds:
            overall[key] = {"median": median(meds), "n": len(meds)}
    return {"workloads": table, "overall": overall}


def summarize(results: dict) -> dict:
    keys = [p["key"] for p in results["profilers"]]
    summary: dict = {}
    if "overhead" in results:
        summary["overhead"] = overhead(results["overhead"], keys)
        threads = own_threads(results["overhead"], keys)
        if threads:
            summary["own_threads"] = threads
        size = profile_size(summary["overhead"], keys)
        if size:
            summary["profile_size"] = size
    if "startup" in results:
        summary["startup"] = startup(results["startup"], keys)
        children = per_child(results["startup"], keys)
        if children:
            summary["per_child"] = children
    if "footprint" in results:
        from . import footprint

        summary["footprint"] = footprint.summarize(results["footprint"])
    acc = results.get("accuracy")
    if acc:
        summary["split"] = accuracy(acc["split"]["runs"], "python_share", keys)
        summary["bias"] = {
            f: accuracy(entry["runs"], "call_share", keys) for f, entry in acc["bias"].items()
        }
        summary["threads"] = accuracy(acc["threads"]["runs"], "worker_share", keys)
        if "short_threads" in acc:
            summary["short_threads"] = accuracy(acc["short_threads"]["runs"], "digest_share", keys)
    return summary
