"""The HTML reporter: one self-contained page that needs nothing but a browser.

The page carries the profile itself as JSON in a data island (``<script
type="application/json" id="profile-data">``) next to a second, small island of view hints
computed here with :mod:`profile_model.queries` (file order, the lines worth showing), so it
shows the same lines as the terminal report. The hand-written stylesheet and scripts in
``html_assets/`` are inlined; the scripts build the DOM with ``textContent`` and
``createElement`` (``createElementNS`` for the SVG of memory charts) only. A
Content-Security-Policy limits the page to its own inline style and scripts (by hash) and
forbids every network request, so the report works from ``file://`` and fetches nothing,
and text from the profile cannot run as code.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from functools import cache
from importlib import resources
from typing import Any

from spyglass.profile_model import queries as proc
from spyglass.profile_model.io import Profile
from spyglass.reporters import page_data
from spyglass.reporters import thread_groups as tg
from spyglass.reporters.base import Reporter

ASSETS = "html_assets"
STYLESHEET = "report.css"
#: Concatenated in this order into one function scope (see the head of util.js).
SCRIPTS = (
    "util.js",
    "tables.js",
    "memory.js",
    "gpu.js",
    "tests.js",
    "flame.js",
    "tree.js",
    "native.js",
    "tasks.js",
    "report.js",
)

#: How many of the run's hottest lines are always shown (as in the terminal report).
TOP_LINES = 5

# Characters that must not appear literally inside a <script> element's JSON: "<" and ">"
# (no "</script>" or "<!--"), "&" (no character references in XHTML-ish tooling), U+2028
# and U+2029 (line terminators for older JavaScript parsers), and lone surrogates (not
# encodable as UTF-8).
_UNSAFE_IN_SCRIPT = re.compile("[<>&\u2028\u2029\ud800-\udfff]")


def _escape_char(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def html_text(text: str) -> str:
    """``text`` escaped for HTML text and attribute values: markup characters and quotes
    as character references, U+2028/U+2029 as references too, lone surrogates replaced."""
    escaped = html.escape(text, quote=True)
    escaped = escaped.replace("\u2028", "&#x2028;").replace("\u2029", "&#x2029;")
    return re.sub("[\ud800-\udfff]", "\ufffd", escaped)


def json_for_script(data: Any) -> str:
    """``data`` as compact JSON that is safe as the content of a ``<script>`` element.

    ``JSON.parse`` (and ``json.loads``) of the result gives ``data`` back; the text contains
    no ``<``, ``>``, ``&``, U+2028 or U+2029 (they are written as ``\\u003c`` etc.).
    """
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _UNSAFE_IN_SCRIPT.sub(_escape_char, text)


@cache
def _asset(name: str) -> str:
    text = resources.files(__package__).joinpath(ASSETS).joinpath(name).read_text("utf-8")
    # The assets are inlined verbatim; make sure none of them can end its element early.
    lowered = text.lower()
    if "</script" in lowered or "</style" in lowered or "<!--" in lowered:
        raise ValueError(f"{ASSETS}/{name} contains a sequence that would break the page")
    return text


def _script_bundle(names: tuple[str, ...] | list[str] = SCRIPTS) -> str:
    """The scripts `names`, inside one strict-mode function so that nothing is global."""
    parts = [f"/* ---- {name} ---- */\n{_asset(name)}" for name in names]
    return '(function () {\n"use strict";\n' + "\n".join(parts) + "\n})();\n"


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def view_hints(
    profile: Profile, *, profile_path: str | None = None, group_threads: bool = True
) -> dict[str, Any]:
    """What the page needs besides the profile: the terminal report's choices of files and
    lines and its groups of threads, so that both reports show the same things."""
    shares = proc.file_share(profile)
    top = proc.top_lines(profile, TOP_LINES)
    always = {(r.path, r.lineno) for r in proc.lines_that_matter(profile, TOP_LINES)}
    matter = {
        s.path: [
            int(ln["lineno"])
            for ln in proc.select_lines(
                profile, s.path, min_percent=proc.MIN_PERCENT, always=always
            )
        ]
        for s in shares
    }
    return {
        "command": proc.command_line(profile),
        "files": [s.path for s in shares],
        "top": [[r.path, r.lineno] for r in top],
        "matter": matter,
        "min_percent": proc.MIN_PERCENT,
        "min_samples": proc.MIN_SAMPLES,
        "profile_path": profile_path,
        "threads": tg.as_hints(tg.group_threads(profile["threads"], group=group_threads)),
    }


def render_html(
    profile: Profile, *, profile_path: str | None = None, group_threads: bool = True
) -> str:
    """The whole HTML document for ``profile`` (a dict as read by spyglass.profile_model.io);
    ``group_threads=False`` lists every thread on its own row."""
    style = _asset(STYLESHEET)
    script = _script_bundle()
    hints = view_hints(profile, profile_path=profile_path, group_threads=group_threads)
    return html_page(
        title=f"spyglass · {hints['command']}",
        style=style,
        script=script,
        noscript="This report is drawn by JavaScript; please allow scripts for this file, "
        "or use <code>spyglass view</code> in a terminal.",
        islands={"profile-data": page_data.pack(profile), "report-config": hints},
    )


def html_page(
    *, title: str, style: str, script: str, noscript: str, islands: dict[str, Any]
) -> str:
    """A self-contained page: its own style and script (allowed by hash, nothing else may
    load), data islands of JSON, and an empty #report the script draws into. `noscript`
    is trusted HTML; `title` is text."""
    csp = "; ".join(
        [
            "default-src 'none'",
            f"script-src {_csp_hash(script)}",
            f"style-src {_csp_hash(style)}",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )
    parts = [
        "<!DOCTYPE html>\n",
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        '<meta name="color-scheme" content="light dark">\n',
        '<meta name="generator" content="spyglass">\n',
        '<link rel="icon" href="data:,">\n',
        f"<title>{html_text(title)}</title>\n",
        f"<style>{style}</style>\n",
        "</head>\n<body>\n",
        '<div id="report">',
        f'<noscript><div class="noscript">{noscript}</div></noscript>',
        "</div>\n",
    ]
    for island, data in islands.items():
        parts += [f'<script type="application/json" id="{island}">', json_for_script(data)]
        parts.append("</script>\n")
    parts += [f"<script>{script}</script>\n", "</body>\n</html>\n"]
    return "".join(parts)


class HtmlReporter(Reporter[Profile]):
    """Renders a profile as one self-contained HTML document, which follows the browser's
    colour scheme and window width. ``profile_path`` (where the profile was written) is
    named on the page; ``group_threads=False`` gives each thread a row of its own."""

    name = "html"
    extensions = (".html", ".htm")
    exact = True  # the data island carries the profile as it is; the page shows it as text

    def __init__(self, *, profile_path: str | None = None, group_threads: bool = True) -> None:
        self.profile_path = profile_path
        self.group_threads = group_threads

    def render(self, doc: Profile) -> str:
        return render_html(doc, profile_path=self.profile_path, group_threads=self.group_threads)


__all__ = [
    "HtmlReporter",
    "html_text",
    "json_for_script",
    "render_html",
    "view_hints",
]
