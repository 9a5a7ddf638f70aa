"""The JSON document of a diff (``spyglass diff --format json``): every change, flagged or
not, as ``spyglass.profile_model.diffing.diff_to_json`` writes it."""

from __future__ import annotations

import json

from spyglass.profile_model.diffing import diff_to_json
from spyglass.reporters.base import Reporter
from spyglass.reporters.comparison import Comparison
from spyglass.safe_text import json_text_safe


class DiffJsonReporter(Reporter[Comparison]):
    name = "json"
    extensions = (".json",)
    exact = True

    def render(self, doc: Comparison) -> str:
        names = {"before_name": doc.before_name, "after_name": doc.after_name}
        data = diff_to_json(doc.diff, doc.before, doc.after, **names)
        return (
            json_text_safe(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)) + "\n"
        )


__all__ = ["DiffJsonReporter"]
