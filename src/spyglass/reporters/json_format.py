"""The json reporter: the profile itself, as a spyglass profile document.

Useful after the view's processors (``--profile-only``, ``--profile-exclude``, ``--top``,
``--min-share``, ``--collapse-threads``): the result is a smaller profile that every
spyglass reader, and the JSON Schema, still accept.
"""

from __future__ import annotations

import json

from spyglass.profile_model.io import Profile
from spyglass.reporters.base import Reporter
from spyglass.safe_text import json_text_safe


class JsonReporter(Reporter[Profile]):
    """Writes the profile as JSON, indented by ``indent`` (None: on one line)."""

    name = "json"
    extensions = (".json",)
    exact = True

    def __init__(self, *, indent: int | None = 2) -> None:
        self.indent = indent

    def render(self, doc: Profile) -> str:
        text = json.dumps(doc, indent=self.indent, ensure_ascii=False, allow_nan=False)
        return json_text_safe(text) + "\n"


__all__ = ["JsonReporter"]
