"""The HTML page of a diff (``spyglass diff --format html``): one self-contained page.

It is built like the profile report (:mod:`spyglass.reporters.html`), with that module's
helpers: the diff document (:func:`diffing.diff_to_json`) travels in a data island
(``<script type="application/json" id="diff-data">``) written by ``json_for_script``; the
stylesheet is report.css plus the few rules in ``DIFF_CSS``; the script is util.js and
tables.js (DOM helpers, sortable tables) followed by diff.js, which draws the page. A
Content-Security-Policy admits exactly that style and script, by hash, and forbids every
request, so the page works from ``file://`` and fetches nothing. Text from the profiles
reaches the page through ``textContent`` only; the one piece written here as HTML, the
title, is escaped with ``html_text``.
"""

from __future__ import annotations

from typing import Any

from spyglass.profile_model.diffing import Diff, diff_to_json
from spyglass.profile_model.io import Profile
from spyglass.reporters import html as _report
from spyglass.reporters.base import Reporter
from spyglass.reporters.comparison import Comparison
from spyglass.reporters.html import html_page

#: Concatenated in this order into one function scope (see the head of util.js).
SCRIPTS = ("util.js", "tables.js", "diff.js")
STYLESHEET = _report.STYLESHEET
#: The id of the data island that holds the diff document.
ISLAND = "diff-data"

#: What the diff page adds to report.css: colours for slower and faster, the two sides.
DIFF_CSS = """
/* --- spyglass diff ------------------------------------------------------------------ */
:root { --good: #1a7f37; }
@media (prefers-color-scheme: dark) { :root { --good: #56d364; } }
.slower { color: var(--bad); }
.faster { color: var(--good); }
td.delta { font-weight: 600; }
.kpi .value .pct { font-size: 14px; font-weight: 500; margin-left: 6px; }
.sides {
  display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 8px 28px;
  margin-top: 6px;
}
.side h3 { margin-top: 8px; }
.side dl { display: grid; grid-template-columns: auto 1fr; gap: 2px 14px; margin: 0; }
.side dt { color: var(--muted); }
.side dd { margin: 0; overflow-wrap: anywhere; font-variant-numeric: tabular-nums; }
.tag {
  display: inline-block; margin-left: 6px; padding: 0 5px; border: 1px solid var(--rule-strong);
  border-radius: 4px; color: var(--muted); font-size: 11px; line-height: 1.5;
}
details.noise > summary { cursor: pointer; list-style-position: outside; margin-left: 14px; }
details.noise > summary h2 { display: inline; font-size: 15px; font-weight: 650; }
details.noise > summary .sub { color: var(--muted); font-size: 13px; margin-left: 12px; }
details.noise[open] > summary { margin-bottom: 4px; }
"""


def asset(name: str) -> str:
    """The text of ``html_assets/<name>``, checked safe to inline (html.py's loader)."""
    return _report._asset(name)


def csp_hash(text: str) -> str:
    """The Content-Security-Policy source (``'sha256-…'``) that admits ``text`` inline."""
    return _report._csp_hash(text)


def stylesheet() -> str:
    """The page's whole stylesheet: report.css followed by ``DIFF_CSS``."""
    return asset(STYLESHEET) + DIFF_CSS


def script_bundle() -> str:
    """The page's whole script: ``SCRIPTS`` inside one strict-mode function."""
    return _report._script_bundle(SCRIPTS)


def _title(doc: dict[str, Any]) -> str:
    before, after = str(doc["before"]["program"]), str(doc["after"]["program"])
    return f"spyglass diff · {after if before == after else f'{before} → {after}'}"


def render_diff_document(doc: dict[str, Any]) -> str:
    """The whole HTML page of ``doc``, a diff document as made by ``diff_to_json``."""
    style = stylesheet()
    script = script_bundle()
    return html_page(
        title=_title(doc),
        style=style,
        script=script,
        noscript="This diff is drawn by JavaScript; please allow scripts for this file, "
        "or use <code>spyglass diff</code> in a terminal.",
        islands={ISLAND: doc},
    )


def diff_document(
    diff: Diff,
    before: Profile,
    after: Profile,
    *,
    before_name: str | None = None,
    after_name: str | None = None,
) -> dict[str, Any]:
    """What the page's data island holds: ``diff_to_json``'s document, and the spyglass
    versions that wrote the two profiles (for the footer)."""
    doc = diff_to_json(diff, before, after, before_name=before_name, after_name=after_name)
    for side, profile in (("before", before), ("after", after)):
        doc[side]["spyglass_version"] = profile.get("spyglass_version")
    return doc


def render_diff_html(
    diff: Diff,
    before: Profile,
    after: Profile,
    *,
    before_name: str | None = None,
    after_name: str | None = None,
) -> str:
    """The whole HTML page of ``diff``, the comparison of ``before`` with ``after``;
    ``before_name`` and ``after_name`` (their files) are shown in the header."""
    names = {"before_name": before_name, "after_name": after_name}
    return render_diff_document(diff_document(diff, before, after, **names))


class DiffHtmlReporter(Reporter[Comparison]):
    """The page of a comparison (see the module's documentation)."""

    name = "html"
    extensions = (".html", ".htm")
    exact = True  # the data island carries the diff as it is; the page shows it as text

    def render(self, doc: Comparison) -> str:
        names = {"before_name": doc.before_name, "after_name": doc.after_name}
        return render_diff_html(doc.diff, doc.before, doc.after, **names)


__all__ = [
    "DIFF_CSS",
    "ISLAND",
    "SCRIPTS",
    "DiffHtmlReporter",
    "asset",
    "csp_hash",
    "diff_document",
    "render_diff_document",
    "render_diff_html",
    "script_bundle",
    "stylesheet",
]
