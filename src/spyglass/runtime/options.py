"""The options a profiling session is made with, shared by the CLI and the API."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from spyglass import _native

DEFAULT_OUTFILE = "spyglass-profile.json"


@dataclasses.dataclass
class ProfileOptions:
    interval_s: float = _native.DEFAULT_INTERVAL_S
    outfile: Path | None = None
    program_paths: list[str] = dataclasses.field(default_factory=list)
    profile_all: bool = False
    profile_only: list[str] = dataclasses.field(default_factory=list)
    profile_exclude: list[str] = dataclasses.field(default_factory=list)
    pseudo_files: list[str] = dataclasses.field(default_factory=list)
    report: bool = True
    color: bool | None = None  # None: colour only when stderr is a terminal

    def as_json(self) -> dict[str, object]:
        return {
            "program_path": self.program_paths,
            "profile_all": self.profile_all,
            "profile_only": self.profile_only,
            "profile_exclude": self.profile_exclude,
            "interval_s": self.interval_s,
        }
