"""The native functions a profile names: which C/C++ function, in which library, took a
line's native time (docs/profile-format.md, "Native functions").

Three optional keys carry them, written only where native samples were taken:

- ``files[path].lines[i].native_functions``: the line's native time by function;
- ``stacks[i].native``: the same for one stack (the native frame below its innermost
  Python frame, for mixed flame graphs), one entry per chain of native callers: an entry's
  ``callers`` (``[{"name", "library"}]``, outermost first) are the native functions
  between the interpreter and the one the samples stopped in;
- ``native_functions`` at the top: every function's self time over the run, with the
  lines that led there.

Each entry is ``{"name", "library", "cpu_s", "samples"}`` (the run's entries add
``lines: [{"file", "lineno", "cpu_s"}]``), heaviest first; a long list ends in one
``[other]`` entry adding up its tail. A function is keyed by its name
and library, so profiles merge by adding up the entries of equal keys.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    Key = tuple[str, str]  # (name, library)
    ChainKey = tuple[str, str, tuple[Key, ...]]  # (name, library, callers outermost first)
    Cost = list[float]  # [cpu_s, samples]


# As the C++ writer keeps them: the lines under one function in the run's table, the
# functions of one line or stack and of the run's table (the rest add up to OTHER).
MAX_LINES_PER_FUNCTION = 20
MAX_PER_LIST = 30
MAX_IN_RUN = 100
OTHER = "[other]"


def _is_entry(v: object) -> bool:
    return (
        isinstance(v, dict)
        and isinstance(v.get("name"), str)
        and isinstance(v.get("library"), str)
        and isinstance(v.get("cpu_s"), (int, float))
        and not isinstance(v.get("cpu_s"), bool)
        and v["cpu_s"] >= 0
        and isinstance(v.get("samples"), int)
        and not isinstance(v.get("samples"), bool)
        and v["samples"] >= 0
    )


def _is_caller(v: object) -> bool:
    return (
        isinstance(v, dict) and isinstance(v.get("name"), str) and isinstance(v.get("library"), str)
    )


def callers(entry: Mapping[str, Any]) -> list[Key]:
    """A stack entry's native callers, outermost first ([] when none were unwound)."""
    value = entry.get("callers")
    if not isinstance(value, list):
        return []
    return [(str(x["name"]), str(x["library"])) for x in value if _is_caller(x)]


def _is_run_line(v: object) -> bool:
    return (
        isinstance(v, dict)
        and isinstance(v.get("file"), str)
        and isinstance(v.get("lineno"), int)
        and isinstance(v.get("cpu_s"), (int, float))
    )


def _check_list(value: object, where: str, problems: list[str], *, run: bool = False) -> None:
    if not isinstance(value, list) or not all(_is_entry(x) for x in value):
        problems.append(f"{where} should be a list of {{name, library, cpu_s, samples}} objects")
        return
    if run and not all(
        isinstance(x.get("lines"), list) and all(_is_run_line(y) for y in x["lines"]) for x in value
    ):
        problems.append(f"{where} entries should hold lines: [{{file, lineno, cpu_s}}]")
    if not all(
        isinstance(x.get("callers", []), list) and all(_is_caller(y) for y in x.get("callers", []))
        for x in value
    ):
        problems.append(f"{where} entries' callers should be a list of {{name, library}} objects")


def check(doc: Mapping[str, Any], problems: list[str]) -> None:
    """Appends the problems of a profile's native-function keys (absent keys are fine)."""
    if "native_functions" in doc:
        _check_list(doc["native_functions"], "native_functions", problems, run=True)
    stacks = doc.get("stacks")
    for i, stack in enumerate(stacks if isinstance(stacks, list) else []):
        if isinstance(stack, dict) and "native" in stack:
            _check_list(stack["native"], f"stacks[{i}].native", problems)
    files = doc.get("files")
    for path, entry in (files if isinstance(files, dict) else {}).items():
        lines = entry.get("lines") if isinstance(entry, dict) else None
        for i, line in enumerate(lines if isinstance(lines, list) else []):
            if isinstance(line, dict) and "native_functions" in line:
                where = f"files[{path!r}].lines[{i}].native_functions"
                _check_list(line["native_functions"], where, problems)


def entries(obj: Mapping[str, Any], key: str = "native_functions") -> list[dict[str, Any]]:
    """The native-function entries under ``key`` of a line, stack or profile, or []."""
    value = obj.get(key)
    return [x for x in value if _is_entry(x)] if isinstance(value, list) else []


def stack_parts(
    stack: Mapping[str, Any], weight: str, total: float
) -> list[tuple[dict[str, Any] | None, float]]:
    """A stack's ``total`` (by ``weight``: "cpu", "samples" or "wait") split for a mixed
    stack: each native function below the innermost frame (with its ``callers``, see
    :func:`callers`) gets its part, and what is left
    (Python, system, native time no function was named for) stays with the Python frames
    (None). Wait time has no native functions."""
    found = entries(stack, "native") if weight in ("cpu", "samples") else []
    parts: list[tuple[dict[str, Any] | None, float]] = []
    named = 0.0
    for x in found:
        value = float(x["cpu_s"]) if weight == "cpu" else float(x["samples"])
        value = min(value, total - named)
        if value > 0:
            parts.append((x, value))
            named += value
    rest = total - named
    if rest > 1e-12 or not parts:
        parts.append((None, max(rest, 0.0)))
    return parts


def _without_templates(name: str) -> str:
    out: list[str] = []
    depth = 0
    for ch in name:
        if ch == "<":
            if depth == 0:
                out.append("<…>")
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def short_name(name: str) -> str:
    """A demangled C++ name as narrow reports show it: template arguments as ``<…>``, no
    parameter list, no return type, no "[clone .constprop.0]" ("void ns::f<int>(double)
    const" → "ns::f<…>"). Other
    names, and operators (whose names hold the brackets), are returned unchanged."""
    if "operator" in name or ("(" not in name and "<" not in name):
        return name
    text = _without_templates(name).strip()
    while text.endswith("]") and " [clone " in text:  # GCC's specialised copies
        text = text[: text.rfind(" [clone ")].rstrip()
    for suffix in (" const", " volatile", " &", " &&"):
        if text.endswith(suffix):
            text = text[: -len(suffix)].rstrip()
    if text.endswith(")"):  # the parameter list: from its matching "("
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                text = text[:i]
                break
    depth = 0
    for i in range(len(text) - 1, -1, -1):  # a return type: before the last top-level space
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if text[i] == " " and depth == 0:
            text = text[i + 1 :]
            break
    return text or name


def short_library(library: str) -> str:
    """A library's name for narrow reports: "libpython3.11.so.1.0" → "libpython3.11",
    "_zlib.cpython-311-x86_64-linux-gnu.so" → "_zlib"."""
    name = library
    for cut in (".cpython-", ".so"):
        at = name.find(cut)
        if at > 0:
            name = name[:at]
    return name


def _sum_into(into: dict[Key, Cost], items: Iterable[Mapping[str, Any]]) -> None:
    for x in items:
        cost = into.setdefault((str(x["name"]), str(x["library"])), [0.0, 0])
        cost[0] += float(x["cpu_s"])
        cost[1] += int(x["samples"])


def _sum_chains(into: dict[ChainKey, Cost], items: Iterable[Mapping[str, Any]]) -> None:
    for x in items:
        key = (str(x["name"]), str(x["library"]), tuple(callers(x)))
        cost = into.setdefault(key, [0.0, 0])
        cost[0] += float(x["cpu_s"])
        cost[1] += int(x["samples"])


def _chains_out(costs: Mapping[ChainKey, Cost]) -> list[dict[str, Any]]:
    other_key: ChainKey = (OTHER, "", ())
    other = list(costs.get(other_key, [0.0, 0]))
    ordered = sorted(
        ((k, c) for k, c in costs.items() if k != other_key), key=lambda kv: (-kv[1][0], kv[0])
    )
    for _, c in ordered[MAX_PER_LIST:]:
        other[0] += c[0]
        other[1] += c[1]
    ordered = ordered[:MAX_PER_LIST]
    if other[1] > 0 or other[0] > 0:
        ordered.append((other_key, other))
    out: list[dict[str, Any]] = []
    for (n, lib, chain), c in ordered:
        entry: dict[str, Any] = {"name": n, "library": lib, "cpu_s": round(c[0], 9)}
        entry["samples"] = int(c[1])
        if chain:
            entry["callers"] = [{"name": cn, "library": cl} for cn, cl in chain]
        out.append(entry)
    return out


def _out(costs: Mapping[Key, Cost], cap: int = MAX_PER_LIST) -> list[dict[str, Any]]:
    other_key = (OTHER, "")
    other = list(costs.get(other_key, [0.0, 0]))
    ordered = sorted(
        ((k, c) for k, c in costs.items() if k != other_key), key=lambda kv: (-kv[1][0], kv[0])
    )
    for _, c in ordered[cap:]:
        other[0] += c[0]
        other[1] += c[1]
    ordered = ordered[:cap]
    if other[1] > 0 or other[0] > 0:
        ordered.append((other_key, other))
    return [
        {"name": n, "library": lib, "cpu_s": round(c[0], 9), "samples": int(c[1])}
        for (n, lib), c in ordered
    ]


class NativeMerge:
    """Adds up the native-function keys of several profiles (used by merging)."""

    def __init__(self) -> None:
        self.lines: dict[tuple[str, int], dict[Key, Cost]] = {}
        self.stacks: dict[tuple[int, ...], dict[ChainKey, Cost]] = {}
        self.run: dict[Key, Cost] = {}
        self.run_lines: dict[Key, dict[tuple[str, int], float]] = {}

    def add_line(self, path: str, lineno: int, line: Mapping[str, Any]) -> None:
        found = entries(line)
        if found:
            _sum_into(self.lines.setdefault((path, lineno), {}), found)

    def add_stack(self, key: tuple[int, ...], stack: Mapping[str, Any]) -> None:
        found = entries(stack, "native")
        if found:
            _sum_chains(self.stacks.setdefault(key, {}), found)

    def add_run(self, profile: Mapping[str, Any]) -> None:
        found = entries(profile)
        _sum_into(self.run, found)
        for x in found:
            into = self.run_lines.setdefault((str(x["name"]), str(x["library"])), {})
            for line in x.get("lines") or []:
                where = (str(line["file"]), int(line["lineno"]))
                into[where] = into.get(where, 0.0) + float(line["cpu_s"])

    def line_out(self, path: str, lineno: int) -> dict[str, Any]:
        costs = self.lines.get((path, lineno))
        return {"native_functions": _out(costs)} if costs else {}

    def stack_out(self, key: tuple[int, ...]) -> dict[str, Any]:
        costs = self.stacks.get(key)
        return {"native": _chains_out(costs)} if costs else {}

    def run_out(self) -> dict[str, Any]:
        if not self.run:
            return {}
        table = _out(self.run, MAX_IN_RUN)
        for entry in table:
            lines = self.run_lines.get((entry["name"], entry["library"]), {})
            ordered = sorted(lines.items(), key=lambda kv: (-kv[1], kv[0]))
            entry["lines"] = [
                {"file": f, "lineno": n, "cpu_s": round(s, 9)}
                for (f, n), s in ordered[:MAX_LINES_PER_FUNCTION]
            ]
        return {"native_functions": table}


__all__ = [
    "MAX_IN_RUN",
    "MAX_LINES_PER_FUNCTION",
    "MAX_PER_LIST",
    "OTHER",
    "NativeMerge",
    "callers",
    "check",
    "entries",
    "short_library",
    "short_name",
    "stack_parts",
]
