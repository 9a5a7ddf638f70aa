"""The interpreter facts the sampler starts with come from the opcode module alone (dis
costs every process of a run milliseconds to import): they must be what dis says."""

from __future__ import annotations

import dis
import sys

from spyglass import _native
from spyglass.runtime import interpreter


def test_every_opcode_is_numbered_as_dis_numbers_it() -> None:
    expected = dict(getattr(dis, "_all_opmap", None) or dis.opmap)
    assert interpreter.all_opmap() == expected


def test_the_call_opcodes_are_this_versions_calls() -> None:
    calls = set(interpreter.call_opcodes())
    names = {name for name, op in interpreter.all_opmap().items() if op in calls}
    if sys.version_info >= (3, 11):
        assert "CALL" in names
        assert any("BUILTIN" in name for name in names)  # specialised calls of C functions
        assert "CALL_PY_EXACT_ARGS" not in names  # a call into Python code stays Python time
    else:
        assert {"CALL_FUNCTION", "CALL_METHOD"} <= names
    assert not any("INTRINSIC" in name for name in names)


def test_cache_units_follow_the_instructions_dis_says() -> None:
    flags = interpreter.bytecode_flags(_native.BYTECODE_FLAGS)
    shift = _native.BYTECODE_FLAGS["cache_shift"]
    entries = getattr(dis, "_inline_cache_entries", None)
    for name, op in dis.opmap.items():
        if op >= 256:
            continue
        if isinstance(entries, dict):
            expected = entries.get(name, 0)
        elif entries is not None:
            expected = entries[op]
        else:
            expected = 0
        assert flags[op] >> shift == expected, name
    assert flags[dis.EXTENDED_ARG] & _native.BYTECODE_FLAGS["extended_arg"]
