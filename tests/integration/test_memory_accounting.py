"""spyglass's exact memory counters against ground truth: spyglass._native.memory_totals()
must equal, per native thread, what the threads of tests/ext/alloc_storm.c measured of
themselves with malloc_usable_size, to the byte and to the call.

The storms run in tests/programs/mem_truth.py, a fresh interpreter per test (a crash or a
deadlock in the hooks fails one test, not the session, and runs under a timeout); it prints
the truth and the totals as JSON and the assertions are here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers import Runner, program, stdout_json

MEM_TRUTH = program("mem_truth.py")
COUNTERS = ("alloc_bytes", "alloc_count", "free_bytes", "free_count")
THREADS = 4


def run_truth(runner: Runner, lib: Path, mode: str) -> dict[str, Any]:
    proc = runner.python([MEM_TRUTH, mode, lib])
    assert proc.returncode == 0, f"mem_truth.py {mode} failed ({proc.returncode}):\n{proc.stderr}"
    result: dict[str, Any] = stdout_json(proc)
    return result


def assert_exact(
    truth: list[dict[str, int]], totals: dict[str, dict[str, int]], where: str
) -> None:
    """Each storm thread's counters in `totals` equal its own measurements."""
    assert len(truth) == THREADS
    problems = []
    for t in truth:
        got = totals.get(str(t["tid"]))
        if got is None:
            problems.append(f"thread {t['tid']}: not in memory_totals() (tids: {sorted(totals)})")
            continue
        for key in COUNTERS:
            if got.get(key) != t[key]:
                problems.append(f"thread {t['tid']} {key}: counted {got.get(key)}, true {t[key]}")
    assert not problems, f"{where}:\n  " + "\n  ".join(problems)


# --------------------------------------------------------------------------- the fixture


@pytest.fixture(scope="module")
def plain_run(make_runner: Any, alloc_storm_lib: Path) -> dict[str, Any]:
    return run_truth(make_runner("mem_truth_plain"), alloc_storm_lib, "plain")


def test_fixture_truth_is_consistent_without_spyglass(plain_run: dict[str, Any]) -> None:
    """Without spyglass: every thread frees what it allocates, has its own tid, and meets
    the sizes the exact test is about (>= 64 KiB blocks, mmapped blocks)."""
    storms = plain_run["storms"]
    tids = {t["tid"] for s in storms for t in s}
    assert len(tids) == 2 * THREADS, f"thread ids not distinct: {tids}"
    assert plain_run["main_tid"] not in tids
    for s in storms:
        for t in s:
            assert t["alloc_count"] >= 1000, t
            assert t["alloc_bytes"] == t["free_bytes"] and t["alloc_count"] == t["free_count"], t
            assert t["large_allocs"] >= 10 and t["huge_allocs"] >= 1, t
            assert t["copy_bytes"] == 0
    # Same seed, same storm: the same calls (usable sizes of aligned blocks may differ).
    counts = [[(t["alloc_count"], t["large_allocs"], t["checksum"]) for t in s] for s in storms]
    assert counts[0] == counts[1], "the storm is not deterministic"
    copy = plain_run["copy"]
    assert copy["copy_bytes"] > 32 << 20 and copy["alloc_count"] == copy["free_count"] == 2
    assert copy["tid"] not in tids


# --------------------------------------------------------------------------- exact counts


@pytest.fixture(scope="module")
def exact_run(make_runner: Any, alloc_storm_lib: Path) -> dict[str, Any]:
    return run_truth(make_runner("mem_truth_exact"), alloc_storm_lib, "exact")


def test_totals_are_keyed_by_native_thread_id(exact_run: dict[str, Any]) -> None:
    assert exact_run["memory_profiled"] is True
    assert exact_run["key_types"] == ["int"], exact_run["key_types"]
    for tid, values in exact_run["totals"].items():
        assert set(COUNTERS) | {"copy_bytes"} <= set(values), f"thread {tid}: {values}"
        assert all(isinstance(v, int) and v >= 0 for v in values.values()), (tid, values)


def test_every_storm_thread_is_counted_exactly(exact_run: dict[str, Any]) -> None:
    assert_exact(exact_run["truth"], exact_run["totals"], "start(memory=True) / storm / stop()")


def test_copies_are_counted_exactly(exact_run: dict[str, Any]) -> None:
    copy = exact_run["copy"]
    got = exact_run["totals"].get(str(copy["tid"]))
    assert got is not None, f"the copy thread {copy['tid']} is not in memory_totals()"
    assert got["copy_bytes"] == copy["copy_bytes"], (got, copy)
    for key in COUNTERS:
        assert got[key] == copy[key], f"copy thread {key}: counted {got[key]}, true {copy[key]}"


# --------------------------------------------------------------------------- cycles


@pytest.fixture(scope="module")
def cycles_run(make_runner: Any, alloc_storm_lib: Path) -> dict[str, Any]:
    return run_truth(make_runner("mem_truth_cycles"), alloc_storm_lib, "cycles")


@pytest.mark.parametrize("k", range(3))
def test_each_start_stop_cycle_counts_its_own_storm(cycles_run: dict[str, Any], k: int) -> None:
    rnd = cycles_run["rounds"][k]
    assert_exact(rnd["truth"], rnd["totals"], f"cycle {k + 1}")
    if k > 0:  # counters start again from zero: the previous cycle's threads are gone
        before = {str(t["tid"]) for t in cycles_run["rounds"][k - 1]["truth"]}
        assert not before & set(rnd["totals"]), f"cycle {k + 1} still has {before}"


@pytest.mark.parametrize("k", range(3))
def test_nothing_is_counted_after_stop(cycles_run: dict[str, Any], k: int) -> None:
    """The totals stay readable after stop() and a storm while stopped changes nothing."""
    rnd = cycles_run["rounds"][k]
    unprofiled = {str(t["tid"]) for t in rnd["unprofiled"]}
    assert not unprofiled & set(rnd["later"]), "threads that ran after stop() were counted"
    assert rnd["later"] == rnd["totals"], "memory_totals() changed after stop()"


# --------------------------------------------------------------------------- fork


@pytest.fixture(scope="module")
def fork_run(make_runner: Any, alloc_storm_lib: Path) -> dict[str, Any]:
    return run_truth(make_runner("mem_truth_fork"), alloc_storm_lib, "fork")


def test_fork_during_a_storm_does_not_deadlock(fork_run: dict[str, Any]) -> None:
    assert fork_run["child_status"] == 0, f"child: {fork_run['child_status']} {fork_run['child']}"
    assert fork_run["memory_profiled"] is True


def test_forked_child_counts_its_own_threads_exactly(fork_run: dict[str, Any]) -> None:
    child = fork_run["child"]
    assert child is not None and "error" not in child, child
    assert_exact(child["truth"], child["totals"], "storm in a child forked while profiling")


def test_fork_leaves_the_parents_totals_alone(fork_run: dict[str, Any]) -> None:
    assert_exact(fork_run["truth"], fork_run["totals"], "the parent's storm across a fork")
    child = fork_run["child"] or {}
    child_threads = {str(t["tid"]) for t in child.get("truth", [])}
    assert child_threads, "no child truth to compare with"
    assert not child_threads & set(fork_run["totals"]), "the child's threads counted in the parent"
