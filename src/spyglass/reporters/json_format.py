"""The json reporter: the profile itself, as a spyglass profile document.

Useful after the view's processors (``--profile-only``, ``--profile-exclude``, ``--top``,
``--min-share``, ``--collapse-threads``): the result is a smaller profile that every
spyglass reader, and the JSON Schema, still accept.
"""

from __future__ import annotations

import json
import os
from typing import TextIO

from spyglass.profile_model.io import Profile, dump_profile
from spyglass.reporters import register


class JsonReporter:
    """Writes the profile as indented JSON."""

    name = "json"
    extension = ".json"
    binary = False
    suffix = ".json"

    def __init__(self, indent: int | None = 2) -> None:
        self.indent = indent

    def render(
        self,
        profile: Profile,
        out: TextIO,
        *,
        color: bool,
        width: int | None,
        profile_path: str | None = None,
    ) -> None:
        json.dump(profile, out, indent=self.indent, ensure_ascii=False, allow_nan=False)
        out.write("\n")

    def write(self, profile: Profile, path: str | os.PathLike[str]) -> None:
        """Write atomically, like ``spyglass run`` does (raises ProfileError on failure)."""
        dump_profile(profile, path, indent=self.indent)


REPORTER = JsonReporter()
register("json", REPORTER)

__all__ = ["REPORTER", "JsonReporter"]
