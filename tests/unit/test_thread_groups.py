"""Threads grouped by name pattern (spyglass.reporters.thread_groups), and the
--no-group-threads option of `spyglass view`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from profile_shapes import server_profile
from spyglass.cli.view import main
from spyglass.reporters.thread_groups import UNNAMED, group_threads, name_pattern


def _thread(name: str | None, cpu: float, wait: float = 0.0) -> dict[str, Any]:
    return {
        "tid": 1,
        "name": name,
        "cpu_python_s": cpu,
        "cpu_native_s": 0.0,
        "cpu_system_s": 0.0,
        "wait_s": wait,
        "samples": int(cpu * 100),
    }


def test_name_pattern() -> None:
    assert (
        name_pattern("Thread-450 (process_request_thread)") == "Thread-N (process_request_thread)"
    )
    assert name_pattern("ThreadPoolExecutor-0_12") == "ThreadPoolExecutor-N_N"
    assert name_pattern("MainThread") == "MainThread"
    assert name_pattern(None) == name_pattern("") == UNNAMED


def test_groups_sum_and_spread() -> None:
    threads = [
        _thread("MainThread", 0.5, wait=2.0),
        *(_thread(f"Thread-{i} (serve)", 0.01 * i) for i in range(1, 601)),
        _thread("Thread-9 (client)", 0.2),
    ]
    groups = group_threads(threads)
    assert [g.name for g in groups] == ["Thread-N (serve)", "MainThread", "Thread-9 (client)"]
    serve = groups[0]
    assert serve.size == 600
    assert serve.cpu_s == pytest.approx(sum(0.01 * i for i in range(1, 601)))
    assert (serve.min_cpu_s, serve.max_cpu_s) == pytest.approx((0.01, 6.0))
    assert threads[serve.members[0]]["name"] == "Thread-600 (serve)"  # costliest first
    # A pattern of one thread keeps that thread's own name.
    assert groups[2].size == 1


def test_each_thread_when_not_grouped() -> None:
    threads = [_thread("Thread-1 (serve)", 0.1), _thread("Thread-2 (serve)", 0.3)]
    groups = group_threads(threads, group=False)
    assert [g.name for g in groups] == ["Thread-2 (serve)", "Thread-1 (serve)"]


def test_view_groups_unless_told_not_to(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "server.json"
    path.write_text(json.dumps(server_profile()), encoding="utf-8")
    assert main([str(path), "--width", "120"]) == 0
    grouped = capsys.readouterr().out
    assert "Threads (609 in 3 groups)" in grouped
    assert main([str(path), "--width", "120", "--no-group-threads"]) == 0
    each = capsys.readouterr().out
    assert "Threads (609)" in each and "Thread-N" not in each
    assert main([str(path), "--html", "--no-group-threads", "-o", str(tmp_path / "p.html")]) == 0
    page = (tmp_path / "p.html").read_text(encoding="utf-8")
    assert '"threads":[{"name":' in page
    assert page.count('"members":[') == 609


def test_a_group_of_tiny_threads_shows_one_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """400 request threads of under 10 ms each read "<0.01s-<0.01s each"."""
    profile = server_profile()
    for t in profile["threads"]:
        if t["name"] != "MainThread":
            t.update(cpu_python_s=0.001, cpu_native_s=0.0, cpu_system_s=0.0, samples=0)
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(profile), encoding="utf-8")
    assert main([str(path), "--width", "160"]) == 0
    out = capsys.readouterr().out
    assert "<0.01s each" in out and "<0.01s-<0.01s" not in out
