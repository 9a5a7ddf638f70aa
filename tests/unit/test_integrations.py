"""The parts of the IPython magic and the pytest plugin that need neither IPython nor a
pytest run: the magic's line, cells' labels, limits and the lines they blame, the
per-test table, and the API that dir(spyglass) lists."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import spyglass
from helpers import FIXTURES_DIR
from spyglass.integrations import cells, limits
from spyglass.integrations.ipython_magic import MagicUsageError, parse_line, split_options
from spyglass.reporters import terminal_tests

DEMO = "/home/ada/memdemo/mem_demo.py"


def mem_profile() -> dict[str, Any]:
    with open(FIXTURES_DIR / "mem_simple.json", encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


@pytest.mark.parametrize(
    ("line", "options", "statement"),
    [
        ("f(x)", [], "f(x)"),
        ("-o out.json --cpu-only f(-1)", ["-o", "out.json", "--cpu-only"], "f(-1)"),
        ("--html 'my report.html' run()", ["--html", "my report.html"], "run()"),
        ("--interval=0.005 -- -x", ["--interval=0.005"], "-x"),
        ("  ", [], ""),
        ('d["it\'s"] = 1', [], 'd["it\'s"] = 1'),
    ],
)
def test_split_options(line: str, options: list[str], statement: str) -> None:
    assert split_options(line) == (options, statement)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("--no-such-option f()", "unrecognized arguments: --no-such-option"),
        ("--interval 99 f()", "between 0.001 and 10"),
        ("--memory-window 12 f()", "between 4K and 1024G"),
        ("--program-path /no/such/dir f()", "is not a directory"),
        ("-o /no/such/dir/p.json f()", "does not exist"),
    ],
)
def test_bad_magic_lines_say_what_is_wrong(line: str, words: str) -> None:
    with pytest.raises(MagicUsageError, match=words):
        parse_line(line)


def test_magic_options_as_in_spyglass_run() -> None:
    ns, statement = parse_line("--cpu-only --interval 0.002 --memory-window 1M work()")
    assert (ns.memory, ns.interval, ns.memory_window, statement) == (
        False,
        0.002,
        1 << 20,
        "work()",
    )
    assert parse_line("work()")[0].memory is True  # memory by default
    assert parse_line("work()")[0].gpu is True  # the GPU too, where NVML loads
    assert parse_line("--no-gpu work()")[0].gpu is False


def test_cells_are_relabelled_everywhere_the_profile_names_them() -> None:
    profile = mem_profile()
    numbers = {DEMO: 7}
    cells.relabel_cells(profile, numbers, own={"/home/ada/memdemo/records.py": "In [3]"})
    assert sorted(profile["files"]) == ["In [3]", "In [7]"]
    framed = {f["file"] for f in profile["frames"]}
    assert {"In [3]", "In [7]"} <= framed and not framed & {DEMO, "/home/ada/memdemo/records.py"}
    assert cells.label_of("<ipython-input-12-0a1b2c>", {}) == "In [12]"
    assert cells.label_of("/home/ada/app.py", {}) is None


def test_limits_judge_the_profile_and_blame_the_heaviest_lines() -> None:
    profile = mem_profile()
    assert limits.parse_limits({"cpu_s": 1, "memory_mb": None}) == {"cpu_s": 1.0}
    for bad in ({"cpu": 1}, {"cpu_s": -1}, {"copy_mb": "10"}, {"memory_mb": True}):
        with pytest.raises(ValueError):
            limits.parse_limits(bad)
    over = limits.overruns(profile, {"cpu_s": 100, "memory_mb": 100, "copy_mb": 650})
    assert [o.name for o in over] == ["memory_mb"]  # 318 MiB peak; 650 MiB copied is not over
    message = limits.failure_message("t.py::test", profile, over, root="/home/ada/memdemo")
    blamed = message.splitlines()[2:]
    assert blamed[0].strip().startswith("mem_demo.py:17  640 MiB allocated  out = bytes(view)")
    assert "mem_demo.py:8" in blamed[1] and "records.py:4" in blamed[2], message
    cpu_first = limits.heaviest_lines(profile, "cpu", 1)
    assert cpu_first == [f"{DEMO}:9  0.638s  grid += np.arange(n)"]


def test_a_cpu_only_profile_is_judged_on_cpu_alone() -> None:
    profile = copy.deepcopy(mem_profile())
    profile["memory_profiled"] = False
    assert limits.overruns(profile, {"memory_mb": 1, "copy_mb": 1}) == []


def test_tests_table_orders_by_cpu_and_fits_its_width() -> None:
    zero = {"cpu_python_s": 0.0, "cpu_native_s": 0.0, "cpu_system_s": 0.0, "wait_s": 0.0}
    tests = [
        {**zero, "nodeid": "a.py::test_light", "outcome": "passed", "cpu_python_s": 0.1},
        {**zero, "nodeid": "a.py::test_" + "heavy" * 20, "outcome": "failed", "cpu_native_s": 2},
    ]
    wide = terminal_tests.tests_table(tests, 10)
    assert "test_heavy" in wide[2] and "[failed]" in wide[2] and "test_light" in wide[3]
    for line in terminal_tests.tests_table(tests, 10, width=80):
        assert len(line) <= 80, line


def test_dir_lists_the_public_api() -> None:
    listed = dir(spyglass)
    assert {"start", "stop", "profile", "ProfilerStateError", "__version__"} <= set(listed)
    assert "api" not in listed and "TYPE_CHECKING" not in listed
    assert callable(spyglass.load_ipython_extension)
