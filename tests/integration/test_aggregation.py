"""How the profile's figures add up (docs/profile-format.md): a function's figures are the sum of
its lines', a file's the sum of its lines', and the process totals the sum of the attributed
files and the unattributed part, and of the threads. Checked on real profiles, exactly for
sample counts and, for times, to the precision the profile writes numbers with."""

from __future__ import annotations

import ast
import copy
import dis
import math
import types
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    TIME_KEYS,
    Profile,
    Runner,
    file_entry,
    line_figures,
    program,
    schema_errors,
    source_lineno,
)

# Programs without lambdas or comprehensions (which share their lines with the enclosing
# function), so that lines partition into functions, but for def lines (see line_owners).
RUNS = {
    "pure_python_run": "pure_python_loop.py",
    "native_calls_run": "native_calls.py",
    "threads_run": "threads_busy_main_joins.py",
    "sleeper_run": "sleeper.py",
    "default_argument_run": "busy_default_argument.py",
}


def code_owners(path: Path) -> dict[int, set[int]]:
    """Maps each line that has instructions to the first lines (co_firstlineno) of the code
    objects a sample on it can be in: one for most, two for a def line, which runs in the
    enclosing code (its defaults, MAKE_FUNCTION) and is where the function's own starts.
    The profile keys lines by number, so such a line's figures are shared by both."""
    owners: dict[int, set[int]] = {}

    def walk(code: types.CodeType, first: int) -> None:
        # A frame that has not run an instruction yet is on its first line (before 3.11 the
        # function's code has no instruction there).
        owners.setdefault(first, set()).add(first)
        for _, lineno in dis.findlinestarts(code):
            if lineno:
                owners.setdefault(lineno, set()).add(first)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                walk(const, const.co_firstlineno)

    walk(compile(path.read_text(encoding="utf-8"), str(path), "exec"), 1)
    return owners


def line_owners(path: Path) -> dict[int, int]:
    """Maps each line of the source to the first line (co_firstlineno: the first decorator's,
    else the def's) of the innermost function or class body it belongs to; module-level lines
    map to 1, the first line of the module's code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    owners: dict[int, int] = {}

    def visit(node: ast.AST, owner: int) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                end = child.end_lineno or child.lineno
                for lineno in range(first, end + 1):
                    owners[lineno] = first
                visit(child, first)
            else:
                visit(child, owner)

    for lineno in range(1, len(path.read_text(encoding="utf-8").splitlines()) + 1):
        owners[lineno] = 1
    visit(tree, 1)
    return owners


def summed(entries: list[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {key: 0.0 for key in TIME_KEYS}
    total["samples"] = 0
    for entry in entries:
        for key in (*TIME_KEYS, "samples"):
            total[key] += entry[key]
    return total


def written_precision(value: float) -> float:
    """How far a number written into the profile can be from the value it stands for: the
    writer keeps 12 significant digits (printf "%.12g"), so half a unit of the twelfth."""
    if value == 0:
        return 0.0
    return 0.5 * 10.0 ** (math.floor(math.log10(abs(value))) - 11)


def assert_same_figures(got: dict[str, Any], parts: list[dict[str, Any]], what: str) -> None:
    """`got` is the sum of `parts`: sample counts exactly; times exactly up to the precision
    the profile writes numbers with (the sum is made before the numbers are written), i.e.
    within the rounding of the written total plus that of each written part."""
    expected = summed(parts)
    assert got["samples"] == expected["samples"], (
        f"{what}: {got['samples']} samples, its parts add up to {expected['samples']}"
    )
    for key in TIME_KEYS:
        slack = written_precision(got[key]) + sum(written_precision(p[key]) for p in parts)
        assert abs(got[key] - expected[key]) <= slack + 1e-12, (
            f"{what}: {key} is {got[key]!r}, its {len(parts)} parts add up to "
            f"{expected[key]!r} (allowed rounding {slack:.2g})"
        )


@pytest.fixture(params=sorted(RUNS))
def run_and_path(request: pytest.FixtureRequest) -> tuple[Profile, Path]:
    _, profile = request.getfixturevalue(request.param)
    return profile, program(RUNS[request.param])


def test_functions_are_the_sum_of_their_lines(run_and_path: tuple[Profile, Path]) -> None:
    profile, path = run_and_path
    entry = file_entry(profile, path)
    owners = line_owners(path)
    in_code = code_owners(path)
    functions = {f["first_lineno"]: f for f in entry["functions"]}
    assert len(functions) == len(entry["functions"]), "two functions share a first line"
    by_owner: dict[int, list[dict[str, Any]]] = {}  # lines of one function only
    shared: dict[int, list[dict[str, Any]]] = {}  # def lines, each of two functions
    for line in entry["lines"]:
        firsts = in_code.get(line["lineno"]) or {owners[line["lineno"]]}
        busy = bool(line["samples"] or any(line[k] for k in TIME_KEYS))
        assert not busy or firsts & functions.keys(), (
            f"line {line['lineno']} has figures but no function of its (first lines "
            f"{sorted(firsts)}) is listed"
        )
        if len(firsts) == 1:
            by_owner.setdefault(next(iter(firsts)), []).append(line)
        else:
            for first in firsts:
                shared.setdefault(first, []).append(line)
    for first, function in functions.items():
        what = f"{path.name}: function {function['name']} (line {first})"
        assert_figures_between(function, by_owner.get(first, []), shared.get(first, []), what)


def assert_figures_between(
    got: dict[str, Any], own: list[dict[str, Any]], shared: list[dict[str, Any]], what: str
) -> None:
    """`got` holds its own lines' figures and up to all of its shared lines': exactly the sum
    of its own lines where the shared ones have none."""
    if not any(line["samples"] or any(line[k] for k in TIME_KEYS) for line in shared):
        assert_same_figures(got, own, what)
        return
    low, extra = summed(own), summed(shared)
    assert low["samples"] <= got["samples"] <= low["samples"] + extra["samples"], (
        f"{what}: {got['samples']} samples, its own lines have {low['samples']} and its "
        f"def lines {extra['samples']} more"
    )
    for key in TIME_KEYS:
        slack = written_precision(got[key]) + sum(
            written_precision(p[key]) for p in [*own, *shared]
        )
        assert low[key] - slack - 1e-12 <= got[key] <= low[key] + extra[key] + slack + 1e-12, (
            f"{what}: {key} is {got[key]!r}, its own lines have {low[key]!r} and its def "
            f"lines {extra[key]!r} more"
        )


def test_def_lines_are_shared_by_the_code_that_makes_a_function_and_the_function() -> None:
    owners = code_owners(program("busy_default_argument.py"))
    source = program("busy_default_argument.py").read_text(encoding="utf-8").splitlines()
    def_line = next(i for i, text in enumerate(source, 1) if text.startswith("def with_default"))
    assert owners[def_line] == {1, def_line}


def test_files_are_the_sum_of_their_lines(run_and_path: tuple[Profile, Path]) -> None:
    profile, _ = run_and_path
    for name, entry in profile["files"].items():
        assert_same_figures(entry, entry["lines"], f"file {name}")
        assert_same_figures(entry, entry["functions"], f"file {name} vs its functions")


def test_totals_are_files_plus_unattributed(run_and_path: tuple[Profile, Path]) -> None:
    profile, _ = run_and_path
    parts = [*profile["files"].values(), profile["unattributed"]]
    assert_same_figures(profile, parts, "process totals vs files + unattributed")


def test_totals_are_the_sum_of_the_threads(run_and_path: tuple[Profile, Path]) -> None:
    profile, _ = run_and_path
    assert_same_figures(profile, profile["threads"], "process totals vs threads")


def test_lines_are_sorted_and_carry_their_source(run_and_path: tuple[Profile, Path]) -> None:
    profile, path = run_and_path
    entry = file_entry(profile, path)
    source = path.read_text(encoding="utf-8").splitlines()
    linenos = [line["lineno"] for line in entry["lines"]]
    assert linenos == sorted(set(linenos))
    for line in entry["lines"]:
        assert line["source"] == source[line["lineno"] - 1], line
    firsts = [f["first_lineno"] for f in entry["functions"]]
    assert firsts == sorted(firsts)


def test_schema_check_rejects_broken_profiles(run_and_path: tuple[Profile, Path]) -> None:
    """The schema check every profile goes through is not vacuous."""
    profile, path = run_and_path
    assert schema_errors(profile) == []
    broken = copy.deepcopy(profile)
    del broken["files"][str(path)]["lines"][0]["samples"]
    broken["threads"][0]["cpu_python_s"] = -1.0
    broken["format"] = "speedscope"
    assert len(schema_errors(broken)) == 3


MODULE_AT_START = program("module_frame_at_start.py")


def test_a_module_frame_before_its_first_line_is_on_its_first_line(runner: Runner) -> None:
    """3.11 on put a module's first instruction (RESUME) on line 0: a module frame caught
    there (under a profile hook's call event) was a frame on line 0 of its file, and a
    sample with it innermost a line 0 in the file's lines, where the source has none."""
    proc, profile = runner.spyglass([MODULE_AT_START])
    assert profile is not None and proc.returncode == 0, proc.stderr
    ours = [f for f in profile["frames"] if f["file"] == str(MODULE_AT_START)]
    assert ours and all(int(f["lineno"]) >= 1 for f in ours), ours
    wait_line = source_lineno(MODULE_AT_START, "# hook:wait")
    assert line_figures(profile, MODULE_AT_START, "# hook:wait")["wait_s"] >= 0.1
    # The stack of the wait, outermost first: the exec line, the module code (its first
    # line), the hook's line.
    frames = profile["frames"]
    run_line = source_lineno(MODULE_AT_START, "# run:module")
    chains = [
        [int(frames[i]["lineno"]) for i in s["frames"] if frames[i]["file"] == str(MODULE_AT_START)]
        for s in profile["stacks"]
        if float(s.get("wait_s", 0)) > 0
    ]
    assert [run_line, 1, wait_line] in chains, chains
    assert all(line["lineno"] >= 1 for line in file_entry(profile, MODULE_AT_START)["lines"])
