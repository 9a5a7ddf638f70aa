"""The options a profiling session is made with, shared by the CLI and the API."""

from __future__ import annotations

from spyglass._constants import DEFAULT_INTERVAL_S, DEFAULT_MEMORY_WINDOW

TYPE_CHECKING = False  # typing costs milliseconds of start-up, which every run pays
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

DEFAULT_OUTFILE = "spyglass-profile.json"


class ProfileOptions:
    # A plain class rather than a dataclass: `dataclasses` costs milliseconds of start-up,
    # and start-up is part of the overhead every profiled run pays.
    def __init__(
        self,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        outfile: str | None = None,
        program_paths: list[str] | None = None,
        profile_all: bool = False,
        profile_only: list[str] | None = None,
        profile_exclude: list[str] | None = None,
        pseudo_files: list[str] | None = None,
        report: bool = True,
        color: bool | None = None,
        html: str | None = None,
        open_browser: bool = False,
        memory: bool = True,
        memory_window: int = DEFAULT_MEMORY_WINDOW,
        group_threads: bool = True,
        gpu: bool = True,
        snapshot_every: float | None = None,
        live: bool = False,
    ) -> None:
        self.interval_s = interval_s
        self.outfile = outfile
        self.program_paths = list(program_paths or [])
        self.profile_all = profile_all
        self.profile_only = list(profile_only or [])
        self.profile_exclude = list(profile_exclude or [])
        self.pseudo_files = list(pseudo_files or [])
        self.report = report
        self.color = color  # None: colour only when stderr is a terminal
        self.html = html  # where to write the HTML report as well (None: nowhere)
        self.open_browser = open_browser  # open the HTML report in a web browser when done
        self.memory = memory  # allocation and copy profiling as well as CPU
        self.memory_window = memory_window  # mean bytes allocated between memory samples
        self.group_threads = group_threads  # reports: threads named alike as one row
        self.gpu = gpu  # GPU utilisation and memory, where NVML loads (docs/gpu.md)
        # `spyglass run`: rewrite the profile (and HTML report) this often while it runs
        self.snapshot_every = snapshot_every
        self.live = live  # `spyglass run --live`: the run so far on the terminal, redrawn

    def to_json(self) -> dict[str, Any]:
        """The options every process of a run profiles with, as plain data (JSON, or
        marshal for the run's children: runtime/run_environment). The others (the report,
        its colour, the HTML page, the browser, where the profile goes) concern only the
        process that ends the run."""
        return {name: _copied(getattr(self, name)) for name in CARRIED}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], **others: Any) -> ProfileOptions:
        """The options ``to_json`` gave ``data`` for, with ``others`` (those it leaves out)."""
        return cls(**{name: data[name] for name in CARRIED if name in data}, **others)

    def recorded(self) -> dict[str, Any]:
        """What the profile records of the options (its ``options`` object, profile format
        v2): ``to_json``'s, with the program's directories under their older name
        ``program_path``, and without the pseudo-files (names of code given as text, which
        the profile's own files show)."""
        data = self.to_json()
        data["program_path"] = data.pop("program_paths")
        del data["pseudo_files"]
        return data


# The options ``to_json`` carries: the constructor's names for them.
CARRIED = (
    "interval_s",
    "memory",
    "memory_window",
    "gpu",
    "program_paths",
    "profile_all",
    "profile_only",
    "profile_exclude",
    "pseudo_files",
)


def _copied(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value
