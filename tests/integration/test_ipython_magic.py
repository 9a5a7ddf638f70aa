"""`%load_ext spyglass`, `%spyglass` and `%%spyglass`: in an in-process IPython shell (a
program of its own, tests/programs/ipython_magic_cells.py) and in a real kernel driven
through jupyter_client. The cell is the user's code: its lines are named after the cell
("In [3]") at the line numbers the user sees, with their source.

Every `_mb` figure is in MiB (2**20 bytes).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_kernel import Kernel

from helpers import Profile, Runner, load_profile, program, stdout_json
from spyglass.reporters.page_data import unpack

CELLS = program("ipython_magic_cells.py")
ISLAND = re.compile(r'<script type="application/json" id="profile-data">(.*?)</script>', re.S)

pytest.importorskip("IPython")


def cell_lines(profile: Profile, label: str) -> dict[int, dict[str, Any]]:
    files = profile["files"]
    assert label in files, f"no file {label!r} in the profile; files: {sorted(files)}"
    return {int(line["lineno"]): line for line in files[label]["lines"]}


def hottest_line(profile: Profile) -> tuple[str, int, str]:
    def cpu(line: dict[str, Any]) -> float:
        return float(line["cpu_python_s"] + line["cpu_native_s"] + line["cpu_system_s"])

    path, line = max(
        ((p, ln) for p, entry in profile["files"].items() for ln in entry["lines"]),
        key=lambda x: cpu(x[1]),
    )
    return path, int(line["lineno"]), str(line.get("source") or "")


def island_of(iframe: str) -> Profile:
    """The profile carried by the HTML report inside the iframe's srcdoc."""
    srcdoc = re.search(r'srcdoc="([^"]*)"', iframe)
    assert srcdoc is not None, iframe[:300]
    page = html.unescape(srcdoc.group(1))
    assert "default-src 'none'" in page, "the page may load from the network"
    found = ISLAND.search(page)
    assert found is not None, "no profile in the page"
    data: Profile = unpack(json.loads(found.group(1)))
    return data


@pytest.fixture(scope="module")
def shell_run(make_runner: Any) -> tuple[dict[str, Any], Path]:
    runner: Runner = make_runner("ipython_cells")
    proc = runner.python([CELLS, runner.workdir])
    assert proc.returncode == 0, f"exit status {proc.returncode}:\n{proc.stderr}"
    return stdout_json(proc), runner.workdir


def test_cell_magic_names_the_cells_lines_with_their_source(
    shell_run: tuple[dict[str, Any], Path],
) -> None:
    results, workdir = shell_run
    define, cell = results["define"]["number"], results["cell"]["number"]
    spin_loop = {(f"In [{define}]", 3), (f"In [{define}]", 4)}
    assert results["cell"]["error"] is None, results["cell"]
    profile = load_profile(workdir / "cell.json")
    # spin's loop, defined in a cell of its own, is where the time went (its `for` and
    # its body share the loop's time in proportions that vary run to run).
    path, lineno, source = hottest_line(profile)
    assert (path, lineno) in spin_loop, (path, lineno, source)
    assert source.strip() in ("for i in range(n):", "total += i * i  # nb:spin"), source
    # The magic's own cell, at the lines the user sees (the magic is line 1).
    lines = cell_lines(profile, f"In [{cell}]")
    assert "nb:alloc" in lines[3]["source"], lines[3]
    assert not any("<ipython-input" in p or "ipykernel_" in p for p in profile["files"])
    text = results["cell"]["displays"][0]["text/plain"]
    assert f"In [{define}]" in text and source.strip()[:20] in text, text
    assert "kept = bytearray(64 << 20)" in text, text
    # The cell's value is its result, as without the magic.
    assert results["cell"]["result"] == str(sum(i * i for i in range(3_000_000)))


def test_cell_magic_measures_the_cells_memory(shell_run: tuple[dict[str, Any], Path]) -> None:
    results, workdir = shell_run
    profile = load_profile(workdir / "cell.json")
    assert profile["memory_profiled"] is True
    alloc = cell_lines(profile, f"In [{results['cell']['number']}]")[3].get("mem_alloc_mb", 0)
    assert abs(alloc - 64) <= 0.05 * 64, f"{alloc} MiB of 64"
    assert profile["max_footprint_mb"] >= 0.95 * 64


def test_notebook_form_is_the_html_report_in_an_iframe(
    shell_run: tuple[dict[str, Any], Path],
) -> None:
    results, workdir = shell_run
    shown = results["cell"]["displays"][0]
    assert shown["text/html"].startswith("<iframe"), shown["text/html"][:200]
    carried = island_of(shown["text/html"])
    assert f"In [{results['cell']['number']}]" in carried["files"]
    assert (workdir / "cell.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_line_magic_profiles_its_statement_with_the_options_given(
    shell_run: tuple[dict[str, Any], Path],
) -> None:
    results, workdir = shell_run
    assert results["line"]["error"] is None, results["line"]
    profile = load_profile(workdir / "line.json")
    assert profile["memory_profiled"] is False  # --cpu-only
    path, lineno, _ = hottest_line(profile)
    define = results["define"]["number"]
    assert (path, lineno) in {(f"In [{define}]", 3), (f"In [{define}]", 4)}, (path, lineno)
    assert results["line"]["result"] == str(sum(i * i for i in range(2_000_000)))


def test_an_error_in_the_cell_still_shows_the_report(
    shell_run: tuple[dict[str, Any], Path],
) -> None:
    results, workdir = shell_run
    assert results["raises"]["error"] == "ZeroDivisionError"
    assert results["raises"]["displays"], "no report shown"
    # The work before the error is in the profile (spin: some 50 ms of CPU).
    assert load_profile(workdir / "raises.json")["samples"] >= 1
    assert "run_magic" not in results["raises"]["stdout"], "spyglass's frames in the traceback"
    assert results["after"]["stdout"].strip() == "yes"  # the shell works on


@pytest.mark.parametrize("key", ["bad_option", "no_statement"])
def test_bad_magic_lines_are_one_line(shell_run: tuple[dict[str, Any], Path], key: str) -> None:
    results, _ = shell_run
    assert results[key]["error"] == "UsageError"
    message = results[key]["stderr"].strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in message, message


# --------------------------------------------------------------------------- real kernel

KERNEL_CELL = """\
%%spyglass -o {outfile}
size = 64 << 20
kept = bytearray(size)  # nb:alloc
total = 0
for i in range(2_500_000):
    total += i  # nb:hot
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, child_env: dict[str, str]) -> Iterator[Kernel]:
    k = Kernel(tmp_path_factory.mktemp("magic_kernel"), child_env)
    try:
        yield k
    finally:
        k.close()


def test_in_a_kernel_the_magic_shows_the_cells_hot_line_and_its_memory(
    kernel: Kernel, tmp_path: Path
) -> None:
    outfile = tmp_path / "kernel.json"
    kernel.run("%load_ext spyglass")
    kernel.run(KERNEL_CELL.format(outfile=outfile))
    profile = load_profile(outfile)
    label = profile["program"].rsplit(" cell ", 1)[-1]  # "%%spyglass cell In [N]"
    path, lineno, source = hottest_line(profile)
    # The loop (its `for` or its body: they share its time) at its line in the cell.
    assert path == label and lineno in (5, 6), (path, lineno, source)
    assert source.strip() in ("for i in range(2_500_000):", "total += i  # nb:hot"), source
    alloc = cell_lines(profile, label)[3].get("mem_alloc_mb", 0)
    assert abs(alloc - 64) <= 0.05 * 64, f"{alloc} MiB of 64"


def test_in_a_kernel_the_report_is_html_and_text(kernel: Kernel) -> None:
    kernel.run("%load_ext spyglass")
    kernel.run("%%spyglass\nw = sum(range(9_000_000))  # nb:kernel")
    assert len(kernel.displays) == 1, kernel.displays
    shown = kernel.displays[0]
    assert "w = sum(range(9_000_000))" in shown["text/plain"], shown["text/plain"]
    carried = island_of(shown["text/html"])
    assert any(path.startswith("In [") for path in carried["files"]), sorted(carried["files"])
