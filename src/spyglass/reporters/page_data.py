"""The profile as the HTML page carries it: the same document, packed without loss.

A profile's lists of records (threads, stacks, frames, lines, ...) repeat their keys in
every record, and the frame table repeats each file's path per frame; on a server with
hundreds of threads that is most of the page. ``pack`` writes each list of two or more
records as a table, ``{"$table": [keys], "rows": [...]}``: the keys are those most
records have, a record with exactly those keys is the list of its values in their order, any
other record stays an object; a column of strings with many repeats is written as
indexes into its own list of values (``"$strings": {key: [values]}``). ``unpack`` (and
the page's ``unpackProfile``, report.js) gives the document back exactly. Profile keys
never start with ``$``.
"""

from __future__ import annotations

from typing import Any

TABLE = "$table"
STRINGS = "$strings"


def _keys(records: list[Any]) -> list[str] | None:
    if len(records) < 2 or not all(isinstance(r, dict) for r in records):
        return None
    if any(k.startswith("$") for r in records for k in r):
        return None
    counts: dict[tuple[str, ...], int] = {}
    for r in records:
        shape = tuple(r)
        counts[shape] = counts.get(shape, 0) + 1
    return list(max(counts.items(), key=lambda item: item[1])[0])


def pack(value: Any) -> Any:
    """``value`` with every list of alike records packed as a table (recursively)."""
    if isinstance(value, dict):
        return {k: pack(v) for k, v in value.items()}
    if not isinstance(value, list):
        return value
    keys = _keys(value)
    if keys is None:
        return [pack(v) for v in value]
    table: dict[str, Any] = {TABLE: keys}
    alike = [len(r) == len(keys) and all(k in r for k in keys) for r in value]
    strings: dict[str, list[str]] = {}
    for key in keys:
        column = [r[key] for r, ok in zip(value, alike) if ok]
        if all(isinstance(v, str) for v in column) and len(set(column)) * 2 <= len(column):
            strings[key] = list(dict.fromkeys(column))
    index = {key: {s: i for i, s in enumerate(values)} for key, values in strings.items()}
    table["rows"] = [
        [index[k][r[k]] if k in index else pack(r[k]) for k in keys] if ok else pack(r)
        for r, ok in zip(value, alike)
    ]
    if strings:
        table[STRINGS] = strings
    return table


def unpack(value: Any) -> Any:
    """The document ``pack`` was given."""
    if isinstance(value, list):
        return [unpack(v) for v in value]
    if not isinstance(value, dict):
        return value
    if TABLE not in value:
        return {k: unpack(v) for k, v in value.items()}
    keys: list[str] = value[TABLE]
    strings: dict[str, list[str]] = value.get(STRINGS, {})
    return [
        {k: strings[k][v] if k in strings else unpack(v) for k, v in zip(keys, row)}
        if isinstance(row, list)
        else unpack(row)
        for row in value["rows"]
    ]


__all__ = ["STRINGS", "TABLE", "pack", "unpack"]
