"""Threads grouped by what they are, so that a server's 600 request threads are one row.

A thread-per-request server names its threads ``Thread-1 (process_request_thread)``,
``Thread-2 (process_request_thread)``... (Python 3.10 and later put the target function in
the name); a pool names them ``ThreadPoolExecutor-0_3``. Threads whose names differ only
in their numbers belong together: their name with every run of digits replaced by ``N`` is
the group's pattern, which keeps the target function. A pattern shared by one thread only
stays that thread's own name.

Pure functions over the profile's ``threads`` list, shared by the terminal and HTML
reports so both group alike.
"""

from __future__ import annotations

from spyglass.profile_model import queries as proc

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

UNNAMED = "(unnamed)"


class ThreadGroup:
    __slots__ = (
        "cpu_s",
        "max_cpu_s",
        "members",
        "min_cpu_s",
        "name",
        "native_s",
        "python_s",
        "samples",
        "system_s",
        "wait_s",
    )

    def __init__(
        self,
        name: str,
        members: list[int],
        cpu_s: float,
        python_s: float,
        native_s: float,
        system_s: float,
        wait_s: float,
        samples: int,
        min_cpu_s: float,
        max_cpu_s: float,
    ) -> None:
        self.name = name  # the pattern ("Thread-N (serve)"), or the one thread's own name
        self.members = members  # indices into profile["threads"], by CPU descending
        self.cpu_s = cpu_s  # summed
        self.python_s = python_s
        self.native_s = native_s
        self.system_s = system_s
        self.wait_s = wait_s
        self.samples = samples
        self.min_cpu_s = min_cpu_s  # the spread of the members' CPU
        self.max_cpu_s = max_cpu_s

    @property
    def size(self) -> int:
        return len(self.members)


def name_pattern(name: object) -> str:
    """The group a thread named ``name`` belongs to: digits become ``N``."""
    if name is None or str(name) == "":
        return UNNAMED
    out: list[str] = []
    in_digits = False  # a run of digits is one N
    for c in str(name):
        if not c.isdecimal():
            out.append(c)
        elif not in_digits:
            out.append("N")
        in_digits = c.isdecimal()
    return "".join(out)


def group_threads(threads: Sequence[Mapping[str, Any]], *, group: bool = True) -> list[ThreadGroup]:
    """``threads`` gathered by name pattern (each thread its own group when ``group`` is
    false), by CPU descending then wait descending then name."""
    keyed: dict[str, list[int]] = {}
    for index, thread in enumerate(threads):
        key = name_pattern(thread.get("name")) if group else f"#{index}"
        keyed.setdefault(key, []).append(index)
    groups = []
    for key, members in keyed.items():
        if len(members) == 1:  # a pattern of one thread: its own name says more
            raw = threads[members[0]].get("name")
            key = UNNAMED if raw is None or str(raw) == "" else str(raw)
        members.sort(key=lambda i: (-proc.cpu_s(threads[i]), i))
        cpus = [proc.cpu_s(threads[i]) for i in members]

        def total(field: str, members: list[int] = members) -> float:
            return sum(float(threads[i][field]) for i in members)

        groups.append(
            ThreadGroup(
                name=key,
                members=members,
                cpu_s=sum(cpus),
                python_s=total("cpu_python_s"),
                native_s=total("cpu_native_s"),
                system_s=total("cpu_system_s"),
                wait_s=total("wait_s"),
                samples=sum(int(threads[i]["samples"]) for i in members),
                min_cpu_s=min(cpus),
                max_cpu_s=max(cpus),
            )
        )
    groups.sort(key=lambda g: (-g.cpu_s, -g.wait_s, g.name))
    return groups


def as_hints(groups: Sequence[ThreadGroup]) -> list[dict[str, Any]]:
    """The groups for the HTML page, which sums the figures itself: name and members."""
    return [{"name": g.name, "members": list(g.members)} for g in groups]


__all__ = ["UNNAMED", "ThreadGroup", "as_hints", "group_threads", "name_pattern"]
