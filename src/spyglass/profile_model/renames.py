"""Renaming a file of a profile everywhere the profile names it."""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from typing import Any


def rename_file(profile: dict[str, Any], old: str, new: str) -> None:
    """Gives the file `old` of `profile` the name `new`: its entry, the frames in it and
    the peak's location. `new` must not be a file of the profile already."""
    profile["files"][new] = profile["files"].pop(old)
    for frame in profile.get("frames") or []:
        if frame.get("file") == old:
            frame["file"] = new
    if profile.get("max_footprint_file") == old:
        profile["max_footprint_file"] = new
