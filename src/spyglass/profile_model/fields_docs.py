"""The field tables of docs/profile-format.md, made from the field table (fields.FIELDS).

The tables sit between two marker comments in the document; everything else in it is
written by hand. ``python -m spyglass.profile_model.schema_build`` rewrites them.
"""

from __future__ import annotations

from pathlib import Path

from spyglass.profile_model import fields
from spyglass.profile_model.kinds import kind

BEGIN = "<!-- fields: generated from src/spyglass/profile_model/fields.py, do not edit -->"
END = "<!-- fields: end -->"

_TITLES = {
    "run": "Top level",
    "unattributed": "`unattributed`",
    "thread": "`threads[]`",
    "file": "`files[path]`",
    "line": "`files[path].lines[]`",
    "function": "`files[path].functions[]`",
    "leak": "`files[path].leaks[]`",
    "frame": "`frames[]`",
    "stack": "`stacks[]`",
    "process": "`processes[]`",
    "options": "`options`",
    "native_function": "`native_functions[]` (run and lines) and `stacks[].native[]`",
    "native_line": "`native_functions[].lines[]`",
    "native_caller": "`stacks[].native[].callers[]`",
    "gpu_device": "`gpu_devices[]` (top level)",
    "gpu_line_device": "`files[path].lines[].gpu_devices[]` (and functions')",
}

_PRESENCE_WORDS = {
    "required": "always",
    "memory": "memory profiles",
    "written": "always (not in older profiles)",
    "written-mem": "memory profiles (not in older ones)",
    "optional": "sometimes",
    "gpu": "GPU profiles",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(level: str) -> str:
    """The markdown table of ``level``'s fields."""
    rows = [
        f"### {_TITLES[level]}",
        "",
        "| key | type | unit | present | merged | diff | meaning |",
        "|---|---|---|---|---|---|---|",
    ]
    zeros = fields.zero_omitted(level)
    for f in fields.at(level):
        present = _PRESENCE_WORDS[f.presence] + (", unless 0" if f.name in zeros else "")
        rows.append(
            f"| `{f.name}` | {_cell(kind(f.kind).words)} | {f.unit or ''} | "
            f"{present} | {f.merge} | {f.diff} | {_cell(f.description)} |"
        )
    return "\n".join(rows)


def generated() -> str:
    """Every level's table, with the legend of the merge rules."""
    legend = "\n".join(f"- `{rule}`: {words}" for rule, words in fields.MERGE_RULES.items())
    parts = [table(level) for level in fields.LEVELS]
    diff = (
        "`diff` above: `judged` figures are what `spyglass diff` weighs against their "
        "sampling noise (their sum, CPU time, with `samples`), `shown` ones are reported "
        "beside the verdict, `ignored` ones are not compared."
    )
    merge = "How each field is merged (`merged` above):\n\n" + legend
    return "\n\n".join([*parts, merge, diff])


def updated_docs(text: str) -> str:
    """``text`` (the document) with its generated section replaced by ``generated()``."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError("the document has no generated section (its marker comments)")
    return text[: start + len(BEGIN)] + "\n\n" + generated() + "\n\n" + text[end:]


def docs_path() -> Path | None:
    """docs/profile-format.md of the source checkout this package runs from, if it does."""
    path = Path(__file__).resolve().parents[3] / "docs" / "profile-format.md"
    return path if path.is_file() else None


__all__ = ["BEGIN", "END", "docs_path", "generated", "table", "updated_docs"]
