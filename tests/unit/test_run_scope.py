"""What a process runs and what counts as its code: the interpreter's command line, several
processes' `-c` code, and the whole run's hottest lines when nothing ran in the user's."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Callable

import pytest

from spyglass.profile_model import queries as proc
from spyglass.profile_model import whole_run
from spyglass.runtime import invocation
from spyglass.runtime.fragments import _name_code_strings

Render = Callable[..., str]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["python", "app.py", "-c", "x"], ("script", "app.py")),
        (["python", "-u", "-X", "dev", "-W", "error", "app.py"], ("script", "app.py")),
        (["python", "-Wdefault", "-Xdev", "-m", "json.tool", "f"], ("module", "json.tool")),
        (["python", "-mjson.tool"], ("module", "json.tool")),
        (["python", "-Bc", "print(1)", "a"], ("code", "print(1)")),
        (["python", "-c", "import x"], ("code", "import x")),
        (["python", "--check-hash-based-pycs", "never", "s.py"], ("script", "s.py")),
        (["python", "--", "-weird.py"], ("script", "-weird.py")),
        (["python", "-"], ("stdin", "")),
        (["python", "-u"], ("stdin", "")),
    ],
)
def test_command_lines(argv: list[str], expected: tuple[str, str]) -> None:
    assert invocation.parse(argv) == expected


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["python", "-m", "spyglass", "run", "-O", "app.py"], []),
        (
            ["python", "-O", "-X", "dev", "-Werror", "-m", "spyglass"],
            ["-O", "-X", "dev", "-W", "error"],
        ),
        (["python", "-uOi", "-Xutf8", "/venv/bin/spyglass", "run"], ["-u", "-O", "-X", "utf8"]),
        (["python", "-bbmspyglass"], ["-b", "-b"]),
        (
            ["python", "--check-hash-based-pycs", "never", "s.py"],
            ["--check-hash-based-pycs", "never"],
        ),
        (["python", "-B", "--", "s.py"], ["-B"]),
    ],
)
def test_interpreter_options(argv: list[str], expected: list[str]) -> None:
    # What the program is run with by `spyglass run`: the options spyglass was given.
    assert invocation.interpreter_options(argv) == expected


def test_multiprocessing_helpers_are_told_from_workers() -> None:
    tracker = "from multiprocessing.resource_tracker import main;main(7)"
    server = "from multiprocessing.forkserver import main; main(8, 9, ['__main__'], **{})"
    worker = "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5)"
    assert invocation.helper_role(tracker) == "multiprocessing resource tracker"
    assert invocation.helper_role(server) == "multiprocessing fork server"
    assert invocation.helper_role(worker) == ""
    assert all(invocation.is_launcher_code(c) for c in (tracker, server, worker))
    assert not invocation.is_launcher_code("import multiprocessing")


def test_a_loader_of_code_from_stdin_is_a_launcher() -> None:
    execnet = "import sys;exec(eval(sys.stdin.readline()))"  # pytest-xdist's workers
    assert invocation.is_launcher_code(execnet)
    assert not invocation.is_launcher_code("import sys\nexec(sys.stdin.read())\nwork()")
    assert not invocation.is_launcher_code("import json; print(json.dumps(1))")


def test_module_paths_name_the_top_level_package() -> None:
    import json

    (found,) = invocation.module_paths("json.tool")
    assert found == json.__path__[0]
    # An installed distribution: its other top-level packages too (pytest's are in _pytest).
    import _pytest
    import pytest as pytest_package

    found = invocation.module_paths("pytest")
    assert os.path.dirname(pytest_package.__file__) in found
    assert os.path.dirname(_pytest.__file__) in found
    assert invocation.module_paths("no_such_module_anywhere_12") == []
    assert invocation.module_paths("sys") == []  # built in: no file


def test_a_test_runner_is_not_the_program_its_suite_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spyglass.runtime.target import Target

    suite = tmp_path / "elsewhere" / "tests"
    suite.mkdir(parents=True)
    (suite / "test_io.py").write_text("def test_parse(): pass\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    args = ["-q", f"{suite / 'test_io.py'}::test_parse", "-k", "parse", "missing_dir"]
    paths = Target("module", "pytest", args).default_program_paths()
    assert paths == [str(work), str(suite)]
    assert invocation.module_program_paths("pytest", args) == [str(suite)]
    assert Target("module", "unittest", ["discover"]).default_program_paths() == [str(work)]
    # Any other module run is the program itself, wherever it is installed.
    import json

    assert json.__path__[0] in Target("module", "json.tool", []).default_program_paths()


def _fragment(pid: int, lines: dict[int, str]) -> dict[str, Any]:
    entry = {"lines": [{"lineno": n, "source": s} for n, s in lines.items()]}
    return {
        "pid": pid,
        "files": {"<string>": entry, "/x/a.py": {"lines": []}},
        "frames": [{"file": "<string>", "function": "<module>", "lineno": 1}],
    }


def test_different_c_code_keeps_a_file_each_and_the_same_code_shares_one() -> None:
    root = _fragment(1, {1: "import sys", 2: "work()"})
    same = _fragment(2, {2: "work()"})
    other = _fragment(3, {1: "import os", 3: "spin()"})
    again = _fragment(4, {3: "spin()"})
    _name_code_strings(root, [same, other, again])
    assert "<string>" in root["files"] and "<string>" in same["files"]
    assert sorted(other["files"]) == ["/x/a.py", "<string> (pid 3)"]
    assert other["frames"][0]["file"] == "<string> (pid 3)"
    assert "<string> (pid 3)" in again["files"]  # the same code as pid 3's


def test_hottest_frames_are_the_innermost_frames_of_the_stacks(simple: dict[str, Any]) -> None:
    frames = simple["frames"]
    expected: dict[tuple[str, int], float] = {}
    for stack in simple["stacks"]:
        inner = frames[stack["frames"][-1]]
        key = (inner["file"], inner["lineno"])
        expected[key] = expected.get(key, 0.0) + proc.cpu_s(stack)
    top = whole_run.hottest_frames(simple, 3)
    assert len(top) == min(3, len(expected))
    assert [t.cpu_s for t in top] == pytest.approx(sorted(expected.values(), reverse=True)[:3])
    for t in top:
        assert t.cpu_s == pytest.approx(expected[(t.path, t.lineno)])
        assert t.percent == pytest.approx(100 * t.cpu_s / proc.total_cpu(simple))


def test_an_empty_scope_shows_the_whole_run(simple: dict[str, Any], render: Render) -> None:
    emptied = copy.deepcopy(simple)
    emptied["files"] = {}
    text = render(emptied, width=80)
    assert "No samples landed in profiled code." in text
    assert "Hottest lines of the whole run" in text
    top = whole_run.hottest_frames(simple, 1)[0]
    assert whole_run.short_location(top.path, top.lineno) in text
    advice = " ".join(text.split("Hottest lines of the whole run")[1].split())
    for option in ("--profile-all", "--profile-only SUBSTR", "--program-path DIR"):
        assert option in advice
    assert all(len(line) <= 80 for line in text.splitlines())


def test_without_stacks_the_advice_is_whole(simple: dict[str, Any], render: Render) -> None:
    emptied = copy.deepcopy(simple)
    emptied["files"], emptied["stacks"] = {}, []
    text = render(emptied, width=40)
    assert "No samples landed in profiled code." in text
    assert "Hottest lines" not in text
    assert "(--profile-all reports every file)" in " ".join(text.split())


def test_notes_wrap_rather_than_being_cut(simple: dict[str, Any], render: Render) -> None:
    text = render(simple, width=40)
    flat = " ".join(text.split())
    assert "of CPU ran outside profiled files (start-up, libraries, native threads)" in flat
    assert all(len(line) <= 40 for line in text.splitlines())
