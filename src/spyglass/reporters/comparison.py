"""What a diff reporter renders: the diff of two profiles, with the profiles themselves
(their totals, the spyglass versions that wrote them) and the names they were read from."""

from __future__ import annotations

from typing import Any, NamedTuple

from spyglass.profile_model.diffing import Diff


class Comparison(NamedTuple):
    diff: Diff
    before: dict[str, Any]
    after: dict[str, Any]
    before_name: str | None = None
    after_name: str | None = None


__all__ = ["Comparison"]
