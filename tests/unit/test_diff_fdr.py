"""`spyglass diff` of two runs of one unchanged program flags nothing: the lines and
functions are judged together, their false discovery rate held by Benjamini-Hochberg.

The runs are synthetic, with the noise sampling gives real runs: each line's sample
count is drawn from a Poisson distribution around its true rate (seeded, so the test
is deterministic), 60 lines in 60 functions in 6 files."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from profile_shapes import Builder
from spyglass.cli.diff import main
from spyglass.profile_model.diffing import benjamini_hochberg, diff_profiles

N_LINES = 60
FILES = [f"/srv/app/mod{i}.py" for i in range(6)]
PAIRS = 20


def _poisson(rng: random.Random, rate: float) -> int:
    if rate > 50:  # the normal approximation is close, and fast
        return max(0, round(rng.gauss(rate, math.sqrt(rate))))
    limit, k, p = math.exp(-rate), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def _rates() -> list[float]:
    rng = random.Random(7)
    return [rng.choice([3, 8, 20, 60, 150, 400]) * rng.uniform(0.8, 1.2) for _ in range(N_LINES)]


def _run(seed: int, rates: list[float]) -> dict[str, Any]:
    rng = random.Random(seed)
    b = Builder(FILES[0], set(FILES))
    main_thread = b.thread("MainThread")
    for i, rate in enumerate(rates):
        path = FILES[i % len(FILES)]
        outer = (FILES[0], "<module>", 1, "main()")
        inner = (path, f"work_{i}", 10 + i, f"    total += step_{i}(x)")
        samples = _poisson(rng, rate)
        if samples:
            b.sample([outer, inner], main_thread, samples * 8_000, samples * 2_000)
    return b.profile()


def _flagged(before: dict[str, Any], after: dict[str, Any], **kw: float) -> list[str]:
    diff = diff_profiles(before, after, **kw)
    return [
        f"{c.kind} {c.file}:{c.after_lineno} {c.name}"
        for c in diff.lines + diff.functions
        if c.flagged
    ]


def test_benjamini_hochberg() -> None:
    # The 3rd smallest passes its bound (3/5 * 0.05 = 0.03), so the two below it pass too.
    assert benjamini_hochberg([0.001, 0.045, 0.025, 0.02, 0.9], 0.05) == [
        True,
        False,
        True,
        True,
        False,
    ]
    assert benjamini_hochberg([0.2, 0.5], 0.05) == [False, False]
    assert benjamini_hochberg([], 0.05) == []


def test_unchanged_program_flags_nothing() -> None:
    rates = _rates()
    pairs = [(_run(2 * s, rates), _run(2 * s + 1, rates)) for s in range(PAIRS)]
    # Each figure on its own at 2 sigma (an FDR of 1 lets every such change through):
    # one in twenty of 120 figures, some flagged in nearly every pair.
    alone = sum(len(_flagged(b, a, fdr=1.0)) for b, a in pairs)
    assert alone >= PAIRS
    # Judged together: at most one pair in twenty may show anything (the 5% rate).
    together = [_flagged(b, a) for b, a in pairs]
    assert sum(1 for f in together if f) <= 1, together


def test_a_real_change_is_still_flagged() -> None:
    rates = _rates()
    hot = max(range(N_LINES), key=lambda i: rates[i])
    slower = list(rates)
    slower[hot] *= 1.5
    before, after = _run(100, rates), _run(101, slower)
    flagged = _flagged(before, after)
    assert sorted(flagged) == sorted(
        [
            f"line {FILES[hot % len(FILES)]}:{10 + hot} work_{hot}",
            f"function {FILES[hot % len(FILES)]}:{10 + hot} work_{hot}",
        ]
    )
    diff = diff_profiles(before, after)
    assert diff.tested == len(diff.lines) + len(diff.functions) > 100
    assert diff.slower("lines")[0].after_lineno == 10 + hot


def test_the_output_says_how_many_were_tested(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rates = _rates()
    paths = []
    for seed in (0, 1):
        path = tmp_path / f"run{seed}.json"
        path.write_text(json.dumps(_run(seed, rates)), encoding="utf-8")
        paths.append(str(path))
    tested = diff_profiles(*(json.loads(Path(p).read_text(encoding="utf-8")) for p in paths)).tested
    assert main(paths) == 0
    out = capsys.readouterr().out
    assert f"{tested} lines and functions tested; false discovery rate 5%" in out
    assert "Slower lines (0)" in out and "Faster lines (0)" in out
    assert main([*paths, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tested"] == tested and doc["fdr"] == 0.05
