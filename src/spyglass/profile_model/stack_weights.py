"""What stack formats (collapsed, speedscope, pstats) weigh each stack by, and the part of a
run's figures that no Python stack accounts for."""

from __future__ import annotations

from spyglass.profile_model.io import Profile
from spyglass.profile_model.queries import cpu_s

TYPE_CHECKING = False
if TYPE_CHECKING:
    from spyglass.profile_model.queries import Times

#: Name of the pseudo-frame that stack formats give the time no Python stack accounts for
#: (threads without Python frames, samples taken while no frame was on the stack).
NO_STACK = "[no Python stack]"


def stack_weight(times: Times, weight: str) -> float:
    """The figure of a stack (or any times object) that stack formats weigh it by:
    ``"cpu"`` seconds, ``"wait"`` seconds or ``"samples"``."""
    if weight == "cpu":
        return cpu_s(times)
    if weight == "wait":
        return float(times["wait_s"])
    if weight == "samples":
        return float(times["samples"])
    raise ValueError(f"weight must be 'cpu', 'wait' or 'samples', not {weight!r}")


def unstacked(profile: Profile, weight: str) -> float:
    """How much of the run's total (by ``weight``) its stacks do not account for."""
    rest = stack_weight(profile, weight) - sum(stack_weight(s, weight) for s in profile["stacks"])
    return max(0.0, round(rest, 9))


__all__ = ["NO_STACK", "stack_weight", "unstacked"]
