"""Facts about the running interpreter the native sampler needs at start."""

from __future__ import annotations

import dis

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
