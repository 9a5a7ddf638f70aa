"""The terminal report of a diff (``spyglass diff``): the lines and functions that got
slower or faster beyond the noise, in tables, with the run's totals above them."""

from __future__ import annotations

import io
from typing import IO, Any, TextIO, cast

from spyglass.profile_model.diffing import Change, Diff
from spyglass.reporters import should_use_color
from spyglass.reporters.base import Reporter
from spyglass.reporters.comparison import Comparison
from spyglass.reporters.styled import Console, Text
from spyglass.reporters.terminal_text import make_console, supports_unicode
from spyglass.safe_text import escape_text

STYLES = {"slower": "red", "faster": "green", "noise": "", "muted": "dim", "heading": "bold"}
UNICODE = {"to": "→", "pm": "±", "sigma": "σ", "sqrt": "√"}
ASCII = {"to": "->", "pm": "+-", "sigma": "sigma", "sqrt": "sqrt "}


def _secs(value: float, *, sign: bool = False) -> str:
    if abs(value) < 0.0005:
        return "0s"
    digits = 0 if abs(value) >= 99.5 else 1 if abs(value) >= 9.95 else 2
    return f"{value:+.{digits}f}s" if sign else f"{value:.{digits}f}s"


def _where(c: Change, arrow: str) -> str:
    base = c.file.rsplit("/", 1)[-1]
    b, a = c.before_lineno, c.after_lineno
    if b is not None and a is not None and b != a:
        return f"{base}:{b}{arrow}{a}"
    return f"{base}:{a if a is not None else b}"


class _Report:
    def __init__(self, console: Console, diff: Diff, limit: int, glyphs: dict[str, str]) -> None:
        self.console = console
        self.diff = diff
        self.limit = limit
        self.g = glyphs

    def out(self, text: Text) -> None:
        self.console.print(text, no_wrap=True, overflow="ellipsis", crop=True)

    def row(self, c: Change, label: str) -> Text:
        line = Text("  ")
        line.append(f"{_secs(c.delta_s, sign=True):>8}", style=STYLES[c.verdict])
        noise = _secs(self.diff.threshold_sigma * c.sigma_s)
        line.append(f" {self.g['pm']}{noise:<7}", style=STYLES["muted"])
        line.append(f"{_secs(c.before_s):>7} {self.g['to']} {_secs(c.after_s):<7} ")
        if c.match in ("new", "gone"):
            line.append(f"({c.match}) ", style=STYLES["muted"])
        line.append(label)
        return line

    def table(self, title: str, changes: list[Change], kind: str) -> None:
        self.out(Text())
        self.out(Text(f"{title} ({len(changes)})", style=STYLES["heading"]))
        if not changes:
            self.out(Text("  none beyond the noise", style=STYLES["muted"]))
            return
        for c in changes[: self.limit]:
            where = _where(c, self.g["to"])
            label = f"{where}  {c.source}" if kind == "lines" else f"{c.name}  ({where})"
            self.out(self.row(c, escape_text(label)))
        if len(changes) > self.limit:
            self.out(Text(f"  + {len(changes) - self.limit} more", style=STYLES["muted"]))

    def render(self, before: str, after: str) -> None:
        d, t, g = self.diff, self.diff.total, self.g
        title = Text("spyglass diff", style=STYLES["heading"])
        self.out(title.append(f": {before} {g['to']} {after}", style=""))
        head = Text(f"CPU {_secs(t.before_s)} {g['to']} {_secs(t.after_s)}  ")
        head.append(_secs(t.delta_s, sign=True), style=STYLES[t.verdict])
        if t.before_s > 0:
            head.append(f" ({100 * t.delta_s / t.before_s:+.1f}%)")
        head.append(f" {g['pm']}{_secs(d.threshold_sigma * t.sigma_s)}", style=STYLES["muted"])
        head.append("" if t.flagged else "  within the noise", style=STYLES["muted"])
        self.out(head)
        k = f"{d.threshold_sigma:g}{g['sigma']}"
        rule = f"shown: changes beyond {k}, {g['sigma']} = time/{g['sqrt']}samples"
        self.out(Text(rule, style=STYLES["muted"]))
        tested = f"{d.tested} line{'s' if d.tested != 1 else ''} and functions tested"
        fdr = f"{tested}; false discovery rate {100 * d.fdr:g}% (Benjamini-Hochberg)"
        self.out(Text(fdr, style=STYLES["muted"]))
        self.out(Text(f"columns: change, {g['pm']}{k}, before {g['to']} after", STYLES["muted"]))
        self.table("Slower lines", d.slower("lines"), "lines")
        self.table("Faster lines", d.faster("lines"), "lines")
        self.table("Slower functions", d.slower("functions"), "functions")
        self.table("Faster functions", d.faster("functions"), "functions")
        quiet_l = sum(1 for c in d.lines if not c.flagged and c.delta_s)
        quiet_f = sum(1 for c in d.functions if not c.flagged and c.delta_s)
        self.out(Text())
        lines = f"{quiet_l} line{'s' if quiet_l != 1 else ''}"
        funcs = f"{quiet_f} function{'s' if quiet_f != 1 else ''}"
        note = f"{lines} and {funcs} changed within the noise (not shown)"
        self.out(Text(note, style=STYLES["muted"]))


class DiffTerminalReporter(Reporter[Comparison]):
    """``color`` None: decided by the stream written to (none in ``render``); at most
    ``limit`` rows per table, laid out in ``width`` columns."""

    name = "terminal"
    extensions = (".txt",)

    def __init__(self, *, color: bool | None = None, width: int = 80, limit: int = 20) -> None:
        self.color = color
        self.width = width
        self.limit = limit

    def render(self, doc: Comparison) -> str:
        page = io.StringIO()
        self._lay_out(doc, page, color=bool(self.color))
        return page.getvalue()

    def write_stream(self, doc: Comparison, out: IO[Any]) -> None:
        color = should_use_color(out) if self.color is None else self.color
        self._lay_out(doc, cast(TextIO, out), color=color)
        out.flush()

    def _lay_out(self, doc: Comparison, out: TextIO, *, color: bool) -> None:
        console = make_console(out, width=self.width, color=color)
        glyphs = UNICODE if supports_unicode(out) else ASCII
        # Text for people: names and source lines with their control characters escaped.
        before, after = escape_text(doc.before_name or ""), escape_text(doc.after_name or "")
        _Report(console, doc.diff, self.limit, glyphs).render(before, after)


__all__ = ["DiffTerminalReporter"]
