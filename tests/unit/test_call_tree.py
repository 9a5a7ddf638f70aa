"""The call tree (spyglass.reporters.call_tree) and the terminal's --tree view."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from profile_shapes import tower_profile
from spyglass.cli.view import main
from spyglass.profile_model import queries as proc
from spyglass.reporters.call_tree import IMPORT_NAME, IMPORT_PREFIX, Node, build_tree, tree_rows
from spyglass.reporters.speedscope import to_speedscope


def _walk(node: Node) -> list[Node]:
    out = [node]
    for child in node.children.values():
        out += _walk(child)
    return out


def test_inclusive_times_add_up(multifile: dict[str, Any]) -> None:
    root = build_tree(multifile)
    stacks = multifile["stacks"]
    assert root.cpu_s == pytest.approx(sum(proc.cpu_s(s) for s in stacks))
    for node in _walk(root):
        kids = list(node.children.values())
        # A caller's time holds its callees' (the rest is its own lines').
        assert sum(k.cpu_s for k in kids) <= node.cpu_s + 1e-9
        assert sum(k.wait_s for k in kids) <= node.wait_s + 1e-9


def test_rows_are_pruned_and_chains_folded(multifile: dict[str, Any]) -> None:
    root = build_tree(multifile)
    rows, pruned = tree_rows(
        root, min_percent=1.0, total_cpu=proc.total_cpu(multifile), total_wait=multifile["wait_s"]
    )
    names = [r.node.function for r in rows]
    assert names[0] == "all stacks" and "sharpen" in names
    assert pruned > 0
    folded = [r for r in rows if r.folded]
    assert folded and "Thread.run" in [n.function for n in folded[0].folded]
    sharpen = next(r for r in rows if r.node.function == "sharpen")
    assert sharpen.prefix.endswith("├─ ") and sharpen.node.main_line() == 32


def test_a_deep_tower_folds_and_imports_are_one_node() -> None:
    profile = tower_profile()
    root = build_tree(profile)
    functions = {n.function for n in _walk(root)}
    assert IMPORT_NAME in functions and "_find_and_load" not in functions
    assert "_find_and_load" in {n.function for n in _walk(build_tree(profile, fold_imports=False))}
    rows, _ = tree_rows(
        root, min_percent=1.0, total_cpu=proc.total_cpu(profile), total_wait=profile["wait_s"]
    )
    assert len(rows) < 20  # 128 recorded frames of recursion do not make 128 rows
    assert max(len(r.folded) for r in rows) > 100


def test_speedscope_folds_import_machinery_as_the_flame_graph_does() -> None:
    """Each run of import-machinery frames is one (import) frame, as in the HTML flame
    graph, so a tower of nested imports is a third as deep; the weights are unchanged."""
    profile = tower_profile()
    folded, plain = to_speedscope(profile), to_speedscope(profile, fold_imports=False)
    frames = folded["shared"]["frames"]
    used = {i for p in folded["profiles"] for sample in p["samples"] for i in sample}
    imports = {i for i in used if str(frames[i].get("file", "")).startswith(IMPORT_PREFIX)}
    assert [frames[i]["name"] for i in imports] == [IMPORT_NAME]
    cpu, cpu_plain = folded["profiles"][0], plain["profiles"][0]
    assert cpu["weights"] == cpu_plain["weights"]
    # The tower's stack (recorded 128 frames deep): each import's 5 machinery frames are 1.
    (folded_tower,) = [s for s in cpu["samples"] if imports & set(s)]
    (plain_tower,) = [s for s, f in zip(cpu_plain["samples"], cpu["samples"]) if f == folded_tower]
    assert 2 * len(folded_tower) < len(plain_tower), (folded_tower, plain_tower)
    for sample in cpu["samples"]:  # never two (import) frames in a row
        assert all(not (a in imports and b in imports) for a, b in zip(sample, sample[1:]))


def test_view_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tower.json"
    path.write_text(json.dumps(tower_profile()), encoding="utf-8")
    assert main(["--tree", "--width", "100", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Call tree (inclusive time, callers above callees)" in out
    assert "calls folded: walk]" in out and "(import)" in out
    assert all(len(line) <= 100 for line in out.splitlines())
    assert main(["--tree", "--format", "json", str(path)]) == 2
    assert "--tree applies to the terminal format" in capsys.readouterr().err
