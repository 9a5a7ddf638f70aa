"""What spyglass.stop() returns: the profile, a dict that shows itself in one line."""

from __future__ import annotations

import sys
from typing import IO, Any


def _mb(value: Any) -> str:
    mb = float(value or 0)
    return f"{mb / 1000:.1f} GB" if mb >= 1000 else f"{mb:.1f} MB"


class Profile(dict[str, Any]):
    """The profile as the JSON document's dict (json.dump writes it as it is, and every
    reader of profiles takes it). In a REPL or a notebook it shows a one-line summary
    rather than the whole document; `report()` prints the terminal report."""

    def summary(self) -> str:
        cpu = {k: float(self.get(f"cpu_{k}_s") or 0) for k in ("python", "native", "system")}
        total = sum(cpu.values())
        parts = [f"{float(self.get('elapsed_s') or 0):.2f} s", f"CPU {total:.2f} s"]
        if total > 0:
            parts[-1] += (
                " (" + ", ".join(f"{100 * v / total:.0f}% {k}" for k, v in cpu.items()) + ")"
            )
        parts.append(f"{int(self.get('samples') or 0)} samples")
        if self.get("memory_profiled"):
            parts.append(f"{_mb(self.get('mem_alloc_mb'))} allocated")
        return f"spyglass profile of {self.get('program') or '?'}: " + ", ".join(parts)

    def __repr__(self) -> str:
        return f"<{self.summary()}; .report() prints it>"

    def report(self, file: IO[str] | None = None, **options: Any) -> None:
        """Writes the terminal report (or another format: `format="html"`...) to `file`,
        standard error by default, as `spyglass view` would."""
        from spyglass.reporters import render_report

        render_report(self, file if file is not None else sys.stderr, **options)
