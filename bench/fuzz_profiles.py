#!/usr/bin/env python3
"""The long run of the profile fuzzer (tests/profile_fuzzing.py says what it checks).

    python bench/fuzz_profiles.py --examples 100000 --workers 2 --out fuzz-report.json

Each worker first generates a pool of documents from the shipped JSON Schema
(hypothesis-jsonschema; slow, so done once) and checks them, then checks mutations of the
fixtures and of that pool (the mutations of the unit tier's Hypothesis run, chosen by a
seeded generator) until its share of examples is done. A failure is recorded (its message
and the profile that caused it) and the run goes on. The report (each worker's progress
is written every 500 profiles) has the number of profiles checked, how many validation
accepted, and the failures. Run it at low priority
(nice -n 19): the commands run in-process, one core per worker.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from hypothesis import HealthCheck, given, seed, settings

from profile_fuzzing import (
    RandomChooser,
    check,
    fresh_dir,
    random_profile,
    schema_profiles,
    to_text,
)


def _settings(n: int) -> settings:
    return settings(
        max_examples=n,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )


def _schema_pool(index: int, size: int) -> list[str]:
    """`size` documents from the shipped schema (hypothesis-jsonschema), as JSON texts."""
    from_schema = schema_profiles()
    pool: list[str] = []
    if from_schema is None or not size:
        return pool

    @seed(index)
    @_settings(size)
    @given(doc=from_schema)
    def collect(doc: Any) -> None:
        pool.append(to_text(doc))

    collect()
    return pool


def _share_loading() -> None:
    """Each command of a check reads the same input: after check() has read and validated
    it once for real, the commands get the same outcome from a cache (a copy of the
    profile, or the same error), so that the run's time goes to what differs between
    them: processing, rendering and writing. The unit tier runs without it."""
    import hashlib

    import spyglass.cli.diff
    import spyglass.cli.merge
    import spyglass.cli.view
    import spyglass.profile_model.io as io_

    real = io_.load_profile
    cache: dict[tuple[str, bytes], Any] = {}

    def load_profile(path: Any) -> Any:
        name = str(path)
        try:
            key = (name, hashlib.sha1(Path(name).read_bytes()).digest())
        except OSError:
            return real(path)
        if key not in cache:
            if len(cache) > 64:
                cache.clear()
            try:
                # As text: json.loads copies it many times faster than copy.deepcopy, and
                # exactly (a validated profile has only finite numbers).
                cache[key] = json.dumps(real(path))
            except io_.ProfileError as e:
                cache[key] = e
        found = cache[key]
        if isinstance(found, io_.ProfileError):
            raise io_.ProfileError(str(found))
        return json.loads(found)

    import functools

    for module in (spyglass.cli.view, spyglass.cli.diff, spyglass.cli.merge):
        module.load_profile = load_profile  # type: ignore[attr-defined]
        # argparse parsers are reusable, and building one costs more than a rejection.
        module.build_parser = functools.lru_cache(module.build_parser)  # type: ignore[attr-defined]


def _check(text: str, work: Path, stats: dict[str, Any]) -> None:
    stats["checked"] += 1
    try:
        stats["accepted"] += int(check(text, fresh_dir(work)))
    except AssertionError as e:
        stats["failures"].append({"error": str(e)[:500], "profile": text[:20000]})


def worker(index: int, examples: int, pool_size: int, out: Path, base_seed: int) -> dict[str, Any]:
    stats: dict[str, Any] = {"checked": 0, "accepted": 0, "failures": [], "schema_pool": 0}
    progress = out.with_suffix(f".{index}.json")
    # Each check writes a dozen small files: in memory when the machine has a tmpfs.
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="spyglass-fuzz-", dir=shm) as tmp:
        work = Path(tmp)
        pool = _schema_pool(base_seed + index, pool_size)
        stats["schema_pool"] = len(pool)
        for text in pool:
            _check(text, work, stats)
        # Hypothesis would spend more time on its own bookkeeping than on the commands:
        # the same mutations, chosen by a seeded generator, go many times faster.
        rng = random.Random(base_seed * 1000 + index)
        chooser = RandomChooser(rng)
        _share_loading()
        while stats["checked"] < examples:
            # Half from the fixtures, which mutations mostly leave valid: the renderers
            # get valid profiles with odd values, not only rejections.
            seeds = pool if pool and rng.random() < 0.5 else None
            try:
                text = to_text(random_profile(chooser, seeds))
            except Exception as e:  # the fuzzer's own bug: noted, and the run goes on
                stats["failures"].append({"error": f"generator: {e!r}", "profile": ""})
                continue
            _check(text, work, stats)
            if stats["checked"] % 500 == 0:
                progress.write_text(json.dumps(stats, indent=1))
    progress.write_text(json.dumps(stats, indent=1))
    return stats


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--examples", type=int, default=100_000, help="profiles to check in all")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--pool", type=int, default=200, help="schema documents per worker")
    p.add_argument("--out", type=Path, default=Path("fuzz-report.json"))
    p.add_argument("--seed", type=int, default=0, help="another seed, another run")
    args = p.parse_args()
    start = time.time()
    share = -(-args.examples // args.workers)
    jobs = [(i, share, args.pool, args.out, args.seed) for i in range(args.workers)]
    if args.workers == 1:
        results = [worker(*jobs[0])]
    else:
        with multiprocessing.get_context("fork").Pool(args.workers) as pool:
            results = pool.starmap(worker, jobs)
    report = {
        "checked": sum(r["checked"] for r in results),
        "accepted": sum(r["accepted"] for r in results),
        "schema_pool": sum(r["schema_pool"] for r in results),
        "failures": [f for r in results for f in r["failures"]],
        "seconds": round(time.time() - start),
    }
    args.out.write_text(json.dumps(report, indent=1))
    print(
        f"{report['checked']} profiles checked ({report['accepted']} accepted by validation, "
        f"{report['schema_pool']} from the schema) in {report['seconds']} s: "
        f"{len(report['failures'])} failures"
    )
    for f in report["failures"]:
        print(f"  {f['error']}")
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
