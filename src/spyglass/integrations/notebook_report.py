"""A profile shown where the magic ran: the self-contained HTML report inline in Jupyter,
the terminal report in a terminal IPython.

IPython asks the object for every form it has (``_repr_mimebundle_``) and each front end
shows the richest one it can: a notebook the HTML, a terminal the text. The page goes in
an iframe's ``srcdoc``: it keeps its own stylesheet, scripts and Content-Security-Policy
away from the notebook's, and needs no file and no network. The sandbox lets its scripts
run and nothing else (no same origin, no forms, no navigation of the notebook).
"""

from __future__ import annotations

import html
import shutil
from typing import Any

from spyglass.reporters import get_reporter

IFRAME_HEIGHT_PX = 640
# Text for a notebook's plain-text view (an exported notebook, a console client).
NOTEBOOK_TEXT_WIDTH = 140


class NotebookReport:
    def __init__(
        self,
        profile: dict[str, Any],
        *,
        terminal: bool,
        color: bool = False,
        profile_path: str | None = None,
    ) -> None:
        self.profile = profile
        self.terminal = terminal  # a terminal IPython, which shows text only
        self.color = color
        self.profile_path = profile_path

    def text(self, *, color: bool = False, width: int | None = None) -> str:
        options = {"color": color, "width": width, "profile_path": self.profile_path}
        return str(get_reporter("terminal", **options).render(self.profile))

    def page(self) -> str:
        return str(get_reporter("html", profile_path=self.profile_path).render(self.profile))

    def iframe(self) -> str:
        return (
            f'<iframe title="spyglass report" sandbox="allow-scripts" '
            f'style="width: 100%; height: {IFRAME_HEIGHT_PX}px; border: 1px solid #8884; '
            f'resize: vertical;" srcdoc="{html.escape(self.page(), quote=True)}"></iframe>'
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        if self.terminal:
            width = shutil.get_terminal_size().columns
            return {"text/plain": self.text(color=self.color, width=width)}
        return {
            "text/plain": self.text(width=NOTEBOOK_TEXT_WIDTH),
            "text/html": self.iframe(),
        }

    def __repr__(self) -> str:
        return self.text(width=NOTEBOOK_TEXT_WIDTH)
