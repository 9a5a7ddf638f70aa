"""The profilers' own footprint: the peak RSS each adds to a run of workloads/wide.py
(25 files, 600 threads, 20 at a time) and the size of the profile it writes, against plain
python's peak RSS. Each repetition runs every profiler once, shuffled."""

from __future__ import annotations

import random

from .context import WORKLOAD_DIR, Context
from .env import log

SCRIPT = WORKLOAD_DIR / "wide.py"
GOALS = {"rss_added_mb": 20.0, "profile_kb": 500.0}  # spyglass, issue 19's figures


def measure(ctx: Context, reps: int, duration: float, seed: int) -> dict:
    rng = random.Random(seed + 2)
    runs = []
    log(f"footprint: {reps} repetition(s) of wide.py, {duration:.0f} s each")
    for rep in range(reps):
        order = list(ctx.profilers)
        rng.shuffle(order)
        for p in order:
            base = {"rep": rep, "profiler": p.key}
            if p.key in ctx.unavailable:
                runs.append(
                    {**base, "ok": False, "skipped": True, "reason": ctx.unavailable[p.key]}
                )
                continue
            extra = {"BENCH_DURATION": str(duration)}
            record, out = ctx.run(p, SCRIPT, extra, 120 + 10 * duration, "footprint")
            ctx.done(out)
            record.pop("stdout", None)
            if record["ok"]:
                record.pop("stderr", None)
            runs.append({**record, **base})
    return {"repetitions": reps, "duration_s": duration, "goals": GOALS, "runs": runs}


def summarize(result: dict) -> dict[str, dict]:
    """profiler key -> median peak RSS (MB), RSS added over plain python's median (MB) and
    median profile size (KB); MB and KB are 10^6 and 10^3 bytes, as in spyglass's reports."""
    by_key: dict[str, list[dict]] = {}
    for r in result["runs"]:
        if r.get("ok"):
            by_key.setdefault(r["profiler"], []).append(r)

    def median(values: list[float]) -> float | None:
        values = sorted(values)
        return values[len(values) // 2] if values else None

    plain = median([r["maxrss_kb"] * 1024 / 1e6 for r in by_key.get("none", [])])
    out: dict[str, dict] = {}
    for key, runs in by_key.items():
        rss = median([r["maxrss_kb"] * 1024 / 1e6 for r in runs])
        size = median([r["output_bytes"] / 1e3 for r in runs if r.get("output_bytes")])
        added = rss - plain if rss is not None and plain is not None else None
        out[key] = {"rss_mb": rss, "rss_added_mb": added, "profile_kb": size, "n": len(runs)}
    return out
