"""The call tree of a profile's stacks: inclusive time through library code, down to where
the time is, for the terminal's ``--tree`` view.

Stacks merge into a tree keyed by (file, function) of each frame, outermost first, as the
HTML flame graph does; a run of Python's import-machinery frames
(``<frozen importlib._bootstrap...>``) becomes one ``(import)`` node. A stack's native
functions (with their native callers) hang below its innermost frame, carrying the native
time their samples stopped in, as in the flame graph. Every node carries
the Python / native / system / wait split and, when the stacks have them, the MB
allocated. Pure functions; nothing here renders.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spyglass.profile_model import native_functions
from spyglass.profile_model import queries as proc

IMPORT_PREFIX = "<frozen importlib"
IMPORT_NAME = "(import)"
_KEYS = ("cpu_python_s", "cpu_native_s", "cpu_system_s", "wait_s", "await_s")


@dataclass
class Node:
    function: str
    file: str
    depth: int
    times: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_KEYS, 0.0))
    samples: int = 0
    mem_alloc_mb: float = 0.0
    lines: dict[int, float] = field(default_factory=dict)  # line -> CPU + wait through it
    children: dict[tuple[str, str], Node] = field(default_factory=dict)

    @property
    def cpu_s(self) -> float:
        return self.times["cpu_python_s"] + self.times["cpu_native_s"] + self.times["cpu_system_s"]

    @property
    def wait_s(self) -> float:
        return self.times["wait_s"]

    @property
    def await_s(self) -> float:
        return self.times["await_s"]

    def as_times(self) -> dict[str, Any]:
        return {**self.times, "samples": self.samples}

    def main_line(self) -> int | None:
        """The line most of the node's time went through."""
        return max(self.lines, key=lambda n: (self.lines[n], -n)) if self.lines else None

    def sorted_children(self) -> list[Node]:
        return sorted(self.children.values(), key=lambda c: (-c.cpu_s, -c.wait_s, c.function))


def _add(node: Node, stack: Mapping[str, Any], lineno: int | None) -> None:
    for key in _KEYS:
        node.times[key] += float(stack.get(key, 0.0))
    node.samples += int(stack["samples"])
    node.mem_alloc_mb += float(stack.get("mem_alloc_mb", 0.0))
    if lineno is not None:
        weight = proc.cpu_s(stack) + float(stack["wait_s"])
        node.lines[lineno] = node.lines.get(lineno, 0.0) + weight


def build_tree(profile: Mapping[str, Any], *, fold_imports: bool = True) -> Node:
    """The root ("all stacks") of the profile's call tree."""
    frames: Sequence[Mapping[str, Any]] = profile["frames"]
    root = Node("all stacks", "", 0)
    for stack in profile["stacks"]:
        node = root
        _add(node, stack, None)
        for index in stack["frames"]:
            if not 0 <= index < len(frames):
                break
            frame = frames[index]
            file, function = str(frame["file"]), str(frame["function"])
            lineno: int | None = int(frame["lineno"])
            if file == "<truncated>":
                function, lineno = "(outer frames not recorded)", None
            elif fold_imports and file.startswith(IMPORT_PREFIX):
                if node.function == IMPORT_NAME:
                    continue  # one node for the whole run of them
                file, function, lineno = IMPORT_PREFIX + ">", IMPORT_NAME, None
            child = node.children.get((file, function))
            if child is None:
                child = node.children[(file, function)] = Node(function, file, node.depth + 1)
            _add(child, stack, lineno)
            node = child
        _add_native(node, stack)
    return root


def _add_native(below: Node, stack: Mapping[str, Any]) -> None:
    """The stack's native functions under its innermost frame, each after its callers."""
    for entry in native_functions.entries(stack, "native"):
        own = (str(entry["name"]), str(entry["library"]))
        part = {key: 0.0 for key in _KEYS}
        part["cpu_native_s"] = float(entry["cpu_s"])
        part["samples"] = int(entry["samples"])
        node = below
        for name, library in [*native_functions.callers(entry), own]:
            key = (library or "[native]", name)
            child = node.children.get(key)
            if child is None:
                child = node.children[key] = Node(name, key[0], node.depth + 1)
            _add(child, part, None)
            node = child


@dataclass
class Row:
    """One line of the rendered tree."""

    node: Node
    prefix: str  # the tree's branches before the node's name
    folded: list[Node] = field(default_factory=list)  # a chain shown as this one line


def tree_rows(
    root: Node,
    *,
    min_percent: float,
    total_cpu: float,
    total_wait: float,
    total_await: float = 0.0,
    unicode: bool = True,
    max_chain: int = 3,
) -> tuple[list[Row], int]:
    """The rows of the tree, depth first, children by CPU; nodes below ``min_percent`` of
    the run's CPU and of its wait are pruned (their count is returned), and a chain of more
    than ``max_chain`` nodes each with one shown child is folded into one row."""
    cpu_cut = total_cpu * min_percent / 100.0
    wait_cut = total_wait * min_percent / 100.0
    await_cut = total_await * min_percent / 100.0
    glyphs = ("│  ", "├─ ", "└─ ") if unicode else ("|  ", "|- ", "`- ")
    pipe, tee, corner = glyphs
    rows: list[Row] = []
    cache: dict[int, list[Node]] = {}
    pruned = 0

    def shown(node: Node) -> list[Node]:
        nonlocal pruned
        if id(node) not in cache:
            kids = node.sorted_children()
            keep = [
                c
                for c in kids
                if (c.cpu_s > 0 and c.cpu_s >= cpu_cut)
                or (c.wait_s > 0 and c.wait_s >= wait_cut)
                or (c.await_s > 0 and c.await_s >= await_cut)
            ]
            pruned += len(kids) - len(keep)
            cache[id(node)] = keep
        return cache[id(node)]

    def under(lead: str, branch: str) -> str:
        return lead + ("" if branch == "" else "   " if branch == corner else pipe)

    def visit(node: Node, lead: str, branch: str, folded: list[Node]) -> None:
        rows.append(Row(node, lead + branch, folded))
        inner = under(lead, branch)
        kids = shown(node)
        if len(kids) == 1:
            chain = [kids[0]]
            while len(shown(chain[-1])) == 1:
                chain.append(shown(chain[-1])[0])
            if len(chain) > max_chain:  # a tower: one row for it, then where it ends
                visit(chain[-1], inner, corner, chain[:-1])
                return
        for i, child in enumerate(kids):
            visit(child, inner, corner if i == len(kids) - 1 else tee, [])

    visit(root, "", "", [])
    return rows, pruned


__all__ = ["IMPORT_NAME", "Node", "Row", "build_tree", "tree_rows"]
