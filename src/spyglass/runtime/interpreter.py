"""Facts about the running interpreter the native sampler needs at start.

They come from the opcode module, not dis, which imports a dozen modules on top of it:
every process of a run works these out before the program starts (the run's supervisor
for every process of the same Python), so milliseconds here are milliseconds of start-up.
tests/unit/test_interpreter_facts.py holds them to what dis says."""

from __future__ import annotations

import opcode

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
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


def all_opmap() -> dict[str, int]:
    """Every opcode by name, the specialised forms of 3.11+ included: dis._all_opmap,
    built as dis builds it."""
    table: dict[str, int] = dict(opcode.opmap)
    specialized_map = getattr(opcode, "_specialized_opmap", None)  # 3.13: named numbers
    if isinstance(specialized_map, dict):
        table.update(specialized_map)
        return table
    # 3.11, 3.12: the specialised forms take the unused numbers, in order.
    specialized = getattr(opcode, "_specialized_instructions", None) or []
    empty = [op for op, name in enumerate(opcode.opname) if name.startswith("<")]
    table.update(zip(specialized, empty))
    return table


def call_opcodes() -> list[int]:
    """Opcodes (as stored in code, specialised forms included) that call out of the
    interpreter. A sample whose innermost frame sits on one is inside a C call.

    Names are stable across versions where numbers are not, so the table is built by name:
    CALL_FUNCTION/CALL_METHOD (3.9, 3.10), PRECALL/CALL and their specialisations (3.11+),
    INSTRUMENTED_CALL (3.12+). The CALL_INTRINSIC opcodes run interpreter helpers, not
    user-visible calls, so they stay Python time, as do the calls into Python code.
    """
    table = all_opmap()
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
    entries = getattr(opcode, "_inline_cache_entries", None)
    if isinstance(entries, dict):  # 3.13: by name
        ops = {name: opcode.opmap.get(name, 256) for name in entries}
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
    for op in (op for op in opcode.hasjrel if op < 256):
        flags[op] |= bits["jump_relative"]
        if "BACKWARD" in opcode.opname[op]:
            flags[op] |= bits["jump_backward"]
    for op in (op for op in opcode.hasjabs if op < 256):
        flags[op] |= bits["jump_absolute"]
    for name in _NO_FALLTHROUGH:
        if opcode.opmap.get(name, 256) < 256:
            flags[opcode.opmap[name]] |= bits["no_fallthrough"]
    flags[opcode.EXTENDED_ARG] |= bits["extended_arg"]
    for op, n in _inline_caches().items():
        flags[op] |= n << bits["cache_shift"]
    return flags


def facts() -> dict[str, list[int]]:
    """What the native sampler needs to know of this interpreter's bytecode: the call
    opcodes and each opcode's flags. Worked out once per run and passed on to every
    process of the same Python."""
    from spyglass._constants import BYTECODE_FLAGS

    return {
        "call_opcodes": call_opcodes(),
        "bytecode_flags": bytecode_flags(BYTECODE_FLAGS),
    }
