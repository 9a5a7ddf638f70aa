"""The profile's JSON Schema, made from the field table (fields.FIELDS).

``python -m spyglass.profile_model.schema_build`` rewrites the schema file shipped in the
package and the generated tables of docs/profile-format.md; the test suite checks that
both are what this module makes of the table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from spyglass.profile_model import fields
from spyglass.profile_model.kinds import kind
from spyglass.schema import SCHEMA_VERSION, schema_path

_DESCRIPTION = (
    "One spyglass run. See docs/profile-format.md. Generated from "
    "spyglass/profile_model/fields.py: edit that table, not this file. Times are seconds, "
    "memory and copy volumes MB (2^20 bytes); every aggregate carries the number of samples "
    "behind it. The memory and copy keys are required when memory_profiled is true (the "
    "if/then) and may be absent otherwise. Thread and stack rows leave out every figure "
    "that is 0: read an absent one as 0. Unknown keys of the top level, of options and of "
    "processes are allowed so that readers accept additive extensions; the other objects "
    "are closed."
)

_COMMON_DEFS: dict[str, Any] = {
    "lineno": {"type": "integer", "minimum": 0},
    "mb": {
        "description": "A volume of memory in MB (2^20 bytes), or a rate in MB/s.",
        "type": "number",
        "minimum": 0,
    },
    "window": {"description": "A sampling window in MB.", "type": "number", "exclusiveMinimum": 0},
    "fraction": {"type": "number", "minimum": 0, "maximum": 1},
    "timeline": {
        "description": "[t_s, mb] points: seconds since started_at (increasing) and a "
        "footprint in MB (a line's own footprint may go below zero when it frees more than "
        "it allocates).",
        "type": "array",
        "items": {
            "type": "array",
            "prefixItems": [{"type": "number", "minimum": 0}, {"type": "number"}],
            "minItems": 2,
            "maxItems": 2,
        },
    },
}

# Where each level's objects sit, from the top level: the path through the schema's
# keywords that the memory requirements (the if/then) take to reach them.
_PATHS: dict[str, tuple[str, ...]] = {
    "thread": ("threads", "items"),
    "stack": ("stacks", "items"),
    "process": ("processes", "items"),
    "file": ("files", "additionalProperties"),
    "line": ("files", "additionalProperties", "lines", "items"),
    "function": ("files", "additionalProperties", "functions", "items"),
}


def _property(f: fields.Field) -> dict[str, Any]:
    schema = dict(kind(f.kind).schema)
    if f.presence in ("written", "written-mem", "optional", "gpu") and not f.kind.startswith(
        ("list:", "map:", "object:")
    ):
        schema["description"] = f.description
    return schema


def _object(level: str) -> dict[str, Any]:
    at = fields.at(level)
    return {
        "type": "object",
        "required": [
            f.name
            for f in at
            if f.presence == "required" and f.name not in fields.zero_omitted(level)
        ],
        "properties": {f.name: _property(f) for f in at},
        "additionalProperties": level in fields.OPEN_LEVELS,
    }


def _memory_requirements() -> dict[str, Any]:
    """The "then" of the memory if/then: what memory_profiled: true requires, level by level."""
    then: dict[str, Any] = {"required": list(fields.names("run", presence=["memory"]))}
    for level, path in _PATHS.items():
        zeros = fields.zero_omitted(level)
        required = [n for n in fields.names(level, presence=["memory"]) if n not in zeros]
        if not required:
            continue
        node = then
        for step in path:
            if step in ("items", "additionalProperties"):
                node = node.setdefault(step, {})
            else:
                node = node.setdefault("properties", {}).setdefault(step, {})
        node["required"] = required
    return then


def build_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the current schema version."""
    top = _object("run")
    defs: dict[str, Any] = dict(_COMMON_DEFS)
    for level in fields.LEVELS:
        if level != "run":
            defs[level] = _object(level)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"spyglass profile, schema version {SCHEMA_VERSION}",
        "description": _DESCRIPTION,
        **top,
        "if": {
            "properties": {"memory_profiled": {"const": True}},
            "required": ["memory_profiled"],
        },
        "then": _memory_requirements(),
        # The GPU keys come with gpu_profiled (only ever true); the reader checks the lines'.
        "dependentRequired": {"gpu_profiled": list(fields.names("run", presence=["gpu"]))},
        "$defs": defs,
    }


def schema_text() -> str:
    """The schema file's text, as committed."""
    return json.dumps(build_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    """Rewrite the schema file and the docs' generated tables (``--check``: only say
    whether they are up to date)."""
    from spyglass.profile_model.fields_docs import docs_path, updated_docs

    check = "--check" in argv
    targets = [(schema_path(), schema_text())]
    docs = docs_path()
    if docs is not None:
        targets.append((docs, updated_docs(docs.read_text(encoding="utf-8"))))
    stale = [path for path, text in targets if path.read_text(encoding="utf-8") != text]
    for path, text in targets:
        if path in stale and not check:
            Path(path).write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'stale' if check else 'rewrote'}: {path}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


__all__ = ["build_schema", "main", "schema_text"]
