"""The options a profiling session is made with, shared by the CLI and the API."""

from __future__ import annotations

import spyglass._native as _native

DEFAULT_OUTFILE = "spyglass-profile.json"


class ProfileOptions:
    # A plain class rather than a dataclass: `dataclasses` costs milliseconds of start-up,
    # and start-up is part of the overhead every profiled run pays.
    def __init__(
        self,
        *,
        interval_s: float = _native.DEFAULT_INTERVAL_S,
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
        memory_window: int = _native.DEFAULT_MEMORY_WINDOW,
        group_threads: bool = True,
        gpu: bool = True,
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

    def as_json(self) -> dict[str, object]:
        return {
            "program_path": self.program_paths,
            "profile_all": self.profile_all,
            "profile_only": self.profile_only,
            "profile_exclude": self.profile_exclude,
            "interval_s": self.interval_s,
            "memory": self.memory,
            "memory_window": self.memory_window,
            "gpu": self.gpu,
        }
