"""Every output format (html included), merge and diff, from a real run of examples/demo.py."""

from __future__ import annotations

import io
import json
import pstats
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import REPO_ROOT, RUN_TIMEOUT_S, assert_valid_profile, load_profile, with_zeros
from spyglass.reporters.page_data import unpack

Run = tuple[Path, dict[str, Any]]


def _spyglass(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spyglass", *args],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory, child_env: dict[str, str]) -> Run:
    path = tmp_path_factory.mktemp("formats") / "demo.json"
    done = _spyglass(["run", "--no-report", "-o", str(path), "examples/demo.py"], child_env)
    assert done.returncode == 0, done.stderr
    return path, load_profile(path)


def _view(run: Run, fmt: str, out: Path, env: dict[str, str], *extra: str) -> None:
    done = _spyglass(["view", "--format", fmt, "-o", str(out), *extra, str(run[0])], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""
    assert out.stat().st_size > 0


def test_speedscope(demo_run: Run, tmp_path: Path, child_env: dict[str, str]) -> None:
    out = tmp_path / "demo.speedscope.json"
    _view(demo_run, "speedscope", out, child_env)
    doc = json.loads(out.read_text(encoding="utf-8"))
    profile = demo_run[1]
    cpu = profile["cpu_python_s"] + profile["cpu_native_s"] + profile["cpu_system_s"]
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    assert doc["profiles"][0]["type"] == "sampled" and doc["profiles"][0]["unit"] == "seconds"
    assert sum(doc["profiles"][0]["weights"]) == pytest.approx(cpu, abs=1e-6)
    names = {f["name"] for f in doc["shared"]["frames"]}
    assert {"python_loop", "native_work"} <= names


def test_collapsed(demo_run: Run, tmp_path: Path, child_env: dict[str, str]) -> None:
    out = tmp_path / "demo.folded"
    _view(demo_run, "collapsed", out, child_env)
    profile = demo_run[1]
    lines = out.read_text(encoding="utf-8").splitlines()
    total = sum(int(line.rsplit(" ", 1)[1]) for line in lines)
    cpu = profile["cpu_python_s"] + profile["cpu_native_s"] + profile["cpu_system_s"]
    assert total == round(cpu * 1e6)
    assert any("python_loop (" in line and "examples/demo.py:" in line for line in lines)


def test_pstats(demo_run: Run, tmp_path: Path, child_env: dict[str, str]) -> None:
    out = tmp_path / "demo.pstats"
    _view(demo_run, "pstats", out, child_env)
    profile = demo_run[1]
    report = io.StringIO()
    stats = pstats.Stats(str(out), stream=report)
    cpu = profile["cpu_python_s"] + profile["cpu_native_s"] + profile["cpu_system_s"]
    assert stats.total_tt == pytest.approx(cpu, abs=1e-6)  # type: ignore[attr-defined]
    stats.sort_stats("cumulative").print_stats("python_loop")
    assert "examples/demo.py:10(python_loop)" in report.getvalue()


def test_json_after_processors(demo_run: Run, tmp_path: Path, child_env: dict[str, str]) -> None:
    out = tmp_path / "small.json"
    _view(demo_run, "json", out, child_env, "--top", "2", "--collapse-threads")
    small = load_profile(out)
    assert sum(len(f["lines"]) for f in small["files"].values()) <= 2
    assert len(small["threads"]) == 1
    assert small["samples"] == demo_run[1]["samples"]


def test_html(demo_run: Run, tmp_path: Path, child_env: dict[str, str]) -> None:
    # Without -o the page goes next to the profile, and spyglass says where.
    path, profile = demo_run
    copy = tmp_path / "demo.json"
    copy.write_bytes(path.read_bytes())
    done = _spyglass(["view", "--html", str(copy)], child_env)
    assert done.returncode == 0, done.stderr
    page = tmp_path / "demo.html"
    assert done.stdout == "" and done.stderr == f"spyglass: HTML report written to {page}\n"
    text = page.read_text(encoding="utf-8")
    island = text.split('<script type="application/json" id="profile-data">', 1)[1]
    # The page carries the profile as read (figures left out as 0 in the file, still out).
    assert with_zeros(unpack(json.loads(island.split("</script>", 1)[0]))) == profile
    out = tmp_path / "same.html"
    done = _spyglass(["view", "--format", "html", "-o", str(out), str(copy)], child_env)
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == text


def test_terminal_to_a_file(demo_run: Run, tmp_path: Path, child_env: dict[str, str]) -> None:
    out = tmp_path / "report.txt"
    _view(demo_run, "terminal", out, child_env)
    text = out.read_text(encoding="utf-8")
    assert text.startswith("spyglass · ") and "\x1b[" not in text


def test_merge_and_diff(demo_run: Run, tmp_path: Path, child_env: dict[str, str]) -> None:
    path, profile = demo_run
    merged_path = tmp_path / "twice.json"
    done = _spyglass(["merge", str(path), str(path), "-o", str(merged_path)], child_env)
    assert done.returncode == 0, done.stderr
    merged = load_profile(merged_path)
    assert_valid_profile(merged)
    assert merged["samples"] == 2 * profile["samples"]
    assert len(merged["sources"]) == 2
    done = _spyglass(["diff", "--format", "json", str(path), str(path)], child_env)
    assert done.returncode == 0, done.stderr
    diff = json.loads(done.stdout)
    assert diff["lines"] and not any(c["flagged"] for c in diff["lines"])
    done = _spyglass(["diff", str(path), str(merged_path)], child_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("spyglass diff: ")
    assert all(len(line) <= 80 for line in done.stdout.splitlines())
