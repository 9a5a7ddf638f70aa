"""The suite's guard (conftest.py) against a test that leaves a profiler running or
process hooks installed: it must see both."""

from __future__ import annotations

import os

import pytest

from helpers import left_behind, process_state
from spyglass import api
from spyglass.runtime.options import ProfileOptions
from spyglass.runtime.session import Session


def test_a_profiler_left_running_is_seen_and_stopped() -> None:
    before = process_state()
    assert left_behind(before) == []
    api.start(memory=False)
    assert left_behind(before) == ["left spyglass profiling (start() without stop())"]
    assert not api.is_profiling()  # stopped by the guard
    session = Session(ProfileOptions(memory=False))
    session.start()
    try:
        assert left_behind(before) == ["left 1 profiling session(s) running"]
    finally:
        session.stop()
    assert left_behind(before) == []


def test_a_patch_left_in_place_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    before = process_state()
    monkeypatch.setattr(os, "execv", lambda *args: None)
    assert left_behind(before) == ["left os.execv changed"]
    monkeypatch.undo()
    assert left_behind(before) == []
