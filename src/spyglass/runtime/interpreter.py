"""Facts about the running interpreter the native sampler needs at start."""

from __future__ import annotations

import dis


def call_opcodes() -> list[int]:
    """Opcodes (as stored in code, specialised forms included) that call out of the
    interpreter. A sample whose innermost frame sits on one is inside a C call.

    Names are stable across versions where numbers are not, so the table is built by name:
    CALL_FUNCTION/CALL_METHOD (3.9, 3.10), PRECALL/CALL and their specialisations (3.11+),
    INSTRUMENTED_CALL (3.12+). The CALL_INTRINSIC opcodes run interpreter helpers, not
    user-visible calls, so they stay Python time.
    """
    table: dict[str, int] = dict(getattr(dis, "_all_opmap", None) or dis.opmap)
    return sorted({op for name, op in table.items() if "CALL" in name and "INTRINSIC" not in name})
