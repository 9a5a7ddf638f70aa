"""The pure functions the reporters are built on."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from spyglass.profile_model import queries as proc
from spyglass.profile_model import transforms

SIMPLE = "/home/ada/demo/simple.py"
RESIZE = "/home/ada/src/imgtool/imgtool/resize.py"
PIL = "/home/ada/src/imgtool/.venv/lib/python3.11/site-packages/PIL/Image.py"
IO = "/home/ada/src/imgtool/imgtool/io.py"


def test_cpu_and_total(simple: dict[str, Any]) -> None:
    assert proc.cpu_s({"cpu_python_s": 1, "cpu_native_s": 0.5, "cpu_system_s": 0.25}) == 1.75
    assert proc.total_cpu(simple) == pytest.approx(2.784 + 0.528 + 0.09)


def test_percent_never_divides_by_zero() -> None:
    assert proc.percent(1.0, 4.0) == 25.0
    assert proc.percent(1.0, 0.0) == 0.0


def test_is_rough() -> None:
    assert proc.is_rough({"samples": 9})
    assert not proc.is_rough({"samples": 10})
    assert not proc.is_rough({"samples": 3}, min_samples=2)


def test_breakdown_adds_up_to_the_share(simple: dict[str, Any]) -> None:
    line = simple["files"][SIMPLE]["lines"][1]
    total = proc.total_cpu(simple)
    py, nat, sys_ = proc.breakdown(line, total)
    assert py == pytest.approx(100 * 1.882 / 3.402)
    assert py + nat + sys_ == pytest.approx(100 * proc.cpu_s(line) / total)


def test_summary(simple: dict[str, Any]) -> None:
    s = proc.summary(simple)
    assert s.command == "simple.py"
    assert (s.samples, s.threads, s.exit_status) == (340, 2, 0)
    assert s.cpu_s == pytest.approx(3.402)
    assert s.python_pct + s.native_pct + s.system_pct == pytest.approx(100.0)
    assert s.python_pct == pytest.approx(81.83, abs=0.01)
    assert s.unattributed_pct == pytest.approx(100 * 0.042 / 3.402)
    assert s.wait_s == pytest.approx(3.334)


def test_command_line_quotes_arguments(simple: dict[str, Any]) -> None:
    simple["program"] = "-m tool"
    simple["argv"] = ["/x/tool/__main__.py", "--name", "two words", "it's"]
    assert proc.command_line(simple) == "-m tool --name 'two words' 'it'\"'\"'s'"


def test_file_share_sorted_and_skips_idle_files(multifile: dict[str, Any]) -> None:
    multifile["files"]["/idle.py"] = {
        "cpu_python_s": 0.0, "cpu_native_s": 0.0, "cpu_system_s": 0.0, "wait_s": 0.0,
        "samples": 0, "lines": [], "functions": [],
    }  # fmt: skip
    shares = proc.file_share(multifile)
    assert [s.path for s in shares][:3] == [RESIZE, PIL, IO]
    assert "/idle.py" not in [s.path for s in shares]
    assert [s.percent for s in shares] == sorted((s.percent for s in shares), reverse=True)
    unattributed = proc.percent(proc.cpu_s(multifile["unattributed"]), proc.total_cpu(multifile))
    assert sum(s.percent for s in shares) + unattributed == pytest.approx(100.0)
    assert shares[0].percent == pytest.approx(100 * 11.779 / 17.992)


def test_top_lines(multifile: dict[str, Any]) -> None:
    top = proc.top_lines(multifile, 3)
    assert [(r.path, r.lineno) for r in top] == [(RESIZE, 32), (RESIZE, 33), (PIL, 2192)]
    assert top[0].line["source"].strip().startswith("v = 5 * pixels[i]")
    assert top[0].percent == pytest.approx(100 * top[0].cpu_s / proc.total_cpu(multifile))
    assert proc.top_lines(multifile, 0) == []
    everything = proc.top_lines(multifile, 1000)
    assert all(r.cpu_s > 0 for r in everything)


def test_top_lines_by_wait(multifile: dict[str, Any]) -> None:
    top = proc.top_lines(multifile, 2, by="wait")
    assert [(r.path, r.lineno) for r in top] == [(RESIZE, 50), (RESIZE, 32)]
    assert proc.top_lines(multifile, 2, by="memory") == []  # no memory figures
    with pytest.raises(ValueError):
        proc.top_lines(multifile, 2, by="copy")


def test_filter_files(multifile: dict[str, Any]) -> None:
    before = json.dumps(multifile)
    only = transforms.filter_files(multifile, ["imgtool/imgtool/"], [])
    assert sorted(only["files"]) == sorted(
        [RESIZE, IO, "/home/ada/src/imgtool/imgtool/__main__.py"]
    )
    excluded = transforms.filter_files(multifile, [], ["site-packages", "<string>"])
    assert PIL not in excluded["files"] and "<string>" not in excluded["files"]
    assert RESIZE in excluded["files"]
    both = transforms.filter_files(multifile, ["imgtool"], ["io.py", "__main__"])
    assert sorted(both["files"]) == sorted([RESIZE, PIL])
    assert transforms.filter_files(multifile, [], []) == multifile
    assert json.dumps(multifile) == before, "the input was modified"
    assert both["cpu_python_s"] == multifile["cpu_python_s"]  # shares stay of the whole run


def test_select_lines_threshold_and_hottest(simple: dict[str, Any]) -> None:
    shown = [ln["lineno"] for ln in proc.select_lines(simple, SIMPLE)]
    # 7, 8, 9 pass on CPU; 17 and 18 on wait; 10 and 15 are below 1% of both.
    assert shown == [7, 8, 9, 17, 18]
    strict = [ln["lineno"] for ln in proc.select_lines(simple, SIMPLE, min_percent=50)]
    assert strict == [8]  # 8 is the only line over 50% of CPU, and the file's hottest
    forced = proc.select_lines(simple, SIMPLE, min_percent=50, always=[(SIMPLE, 15), ("/x", 9)])
    assert [ln["lineno"] for ln in forced] == [8, 15]


def test_select_lines_always_keeps_the_hottest_line(multifile: dict[str, Any]) -> None:
    shown = proc.select_lines(multifile, "<string>")
    assert [ln["lineno"] for ln in shown] == [3]


def test_select_lines_when_nothing_ran(simple: dict[str, Any]) -> None:
    idle = copy.deepcopy(simple)
    for line in idle["files"][SIMPLE]["lines"]:
        for key in ("cpu_python_s", "cpu_native_s", "cpu_system_s", "wait_s"):
            line[key] = 0.0
    assert proc.select_lines(idle, SIMPLE) == []


def test_with_gaps() -> None:
    lines = [{"lineno": n} for n in (3, 4, 9, 10, 20)]
    marked = [None if x is None else x["lineno"] for x in proc.with_gaps(lines)]
    assert marked == [3, 4, None, 9, 10, None, 20]
    assert proc.with_gaps([]) == []
    assert proc.with_gaps([{"lineno": 1}]) == [{"lineno": 1}]


def test_hidden_lines(simple: dict[str, Any]) -> None:
    shown = proc.select_lines(simple, SIMPLE)
    count, cpu = proc.hidden_lines(simple, SIMPLE, shown)
    assert count == 2  # lines 10 and 15
    assert cpu == pytest.approx(0.02 + 0.01)


def test_top_functions(multifile: dict[str, Any]) -> None:
    names = [f["name"] for f in proc.top_functions(multifile, RESIZE)]
    assert names[0] == "sharpen"
    assert names[-1] == "resize_all.<locals>.<lambda>"  # wait only: last
    assert len(proc.top_functions(multifile, RESIZE, 2)) == 2


def test_dedent_sources() -> None:
    sources = ["        total += 1", "    for i in x:", "", "\treturn y"]
    assert proc.dedent_sources(sources) == ["    total += 1", "for i in x:", "", "return y"]
    assert proc.dedent_sources([]) == []
