"""Tests of known shapes: one spins the CPU, one allocates and keeps 48 MiB, one sleeps;
two carry limits, one of which its test goes over."""

import time

import pytest

SPIN_S = 0.3


def spin(cpu_s: float) -> int:
    """Runs Python code until this thread has used `cpu_s` seconds of CPU."""
    end = time.thread_time() + cpu_s
    n = 0
    while time.thread_time() < end:  # suite:spin
        n += 1
    return n


def test_spins() -> None:
    assert spin(SPIN_S) > 0


def test_allocates() -> None:
    kept = bytearray(48 << 20)  # suite:alloc
    assert len(kept) == 48 << 20


def test_sleeps() -> None:
    time.sleep(SPIN_S)  # suite:sleep


@pytest.mark.spyglass(cpu_s=0.05)
def test_over_its_cpu_limit() -> None:
    assert spin(SPIN_S) > 0  # suite:over


@pytest.mark.spyglass(cpu_s=60, memory_mb=4096)
def test_within_its_limits() -> None:
    kept = bytearray(16 << 20)
    assert kept[0] == 0
