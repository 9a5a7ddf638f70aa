"""Facts about the running interpreter the native sampler needs at start."""

from __future__ import annotations

import dis
from collections.abc import Mapping

# Specialised call instructions (3.11+) that the interpreter only uses when the callee is
# a Python function, a bound method of one, or a Python class whose __init__ is one: a
# sample sitting on one is the interpreter's own call machinery (binding arguments,
# pushing the frame, allocating the instance), which is Python time, not a C call.
PYTHON_CALLS = frozenset(
    {
        "PRECALL_PYFUNC",  # 3.11
        "PRECALL_BOUND_METHOD",  # 3.11: unpacks a bound method of a Python function
        "CALL_PY_EXACT_ARGS",
        "CALL_PY_WITH_DEFAULTS",  # 3.11, 3.12
        "CALL_BOUND_METHOD_EXACT_ARGS",  # 3.12+
        "CALL_PY_GENERAL",  # 3.13
        "CALL_BOUND_METHOD_GENERAL",  # 3.13
        "CALL_ALLOC_AND_ENTER_INIT",  # 3.13
    }
)


def call_opcodes() -> list[int]:
    """Opcodes (as stored in code, specialised forms included) that call out of the
    interpreter. A sample whose innermost frame sits on one is inside a C call.

    Names are stable across versions where numbers are not, so the table is built by name:
    CALL_FUNCTION/CALL_METHOD (3.9, 3.10), PRECALL/CALL and their specialisations (3.11+),
    INSTRUMENTED_CALL (3.12+). The CALL_INTRINSIC opcodes run interpreter helpers, not
    user-visible calls, so they stay Python time, as do the calls into Python code.
    """
    table: dict[str, int] = dict(getattr(dis, "_all_opmap", None) or dis.opmap)
    return sorted(
        {
            op
            for name, op in table.items()
            if "CALL" in name and "INTRINSIC" not in name and name not in PYTHON_CALLS
        }
    )


# Instructions that never go on to the next one. Names that a version lacks are skipped.
_NO_FALLTHROUGH = (
    "RETURN_VALUE",
    "RETURN_CONST",  # 3.12+
    "RAISE_VARARGS",
    "RERAISE",
    "JUMP_FORWARD",
    "JUMP_ABSOLUTE",  # 3.9, 3.10
    "JUMP_BACKWARD",  # 3.11+
    "JUMP_BACKWARD_NO_INTERRUPT",
)


def _inline_caches() -> dict[int, int]:
    """Code units of inline cache after each opcode (3.11+; none before)."""
    entries = getattr(dis, "_inline_cache_entries", None)
    if isinstance(entries, dict):  # 3.13: by name
        ops = {name: dis.opmap.get(name, 256) for name in entries}
        return {ops[name]: n for name, n in entries.items() if ops[name] < 256 and n}
    if entries is None:
        return {}
    return {op: n for op, n in enumerate(entries) if n}


def bytecode_flags(bits: Mapping[str, int]) -> list[int]:
    """Per opcode value, how the instruction moves control and how many cache units follow
    it, in the native side's encoding (`bits`, from _native.BYTECODE_FLAGS). The sampler
    walks a code object's bytecode with these to find the value-stack depth at each call,
    and from it what the call is calling."""
    flags = [0] * 256
    # 3.12+ list pseudo-instructions too (numbered from 256): the compiler's only.
    for op in (op for op in dis.hasjrel if op < 256):
        flags[op] |= bits["jump_relative"]
        if "BACKWARD" in dis.opname[op]:
            flags[op] |= bits["jump_backward"]
    for op in (op for op in dis.hasjabs if op < 256):
        flags[op] |= bits["jump_absolute"]
    for name in _NO_FALLTHROUGH:
        if dis.opmap.get(name, 256) < 256:
            flags[dis.opmap[name]] |= bits["no_fallthrough"]
    flags[dis.EXTENDED_ARG] |= bits["extended_arg"]
    for op, n in _inline_caches().items():
        flags[op] |= n << bits["cache_shift"]
    return flags
