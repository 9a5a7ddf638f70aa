"""``spyglass diff``: what got faster or slower between two profiles, beyond the noise."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.text import Text

from spyglass.cli._args import OneLineParser, columns, int_at_least, number_between
from spyglass.outfile import STDOUT, write_output
from spyglass.profile_model.diffing import (
    DEFAULT_FDR,
    DEFAULT_THRESHOLD_SIGMA,
    Change,
    Diff,
    diff_profiles,
    diff_to_json,
)
from spyglass.profile_model.io import Profile, ProfileError, load_profile
from spyglass.reporters import should_use_color
from spyglass.reporters.terminal import make_console, supports_unicode
from spyglass.runtime.output import open_in_browser
from spyglass.safe_text import escape_data, escape_text, json_text_safe

EXIT_OK = 0
EXIT_ERROR = 2

DESCRIPTION = """\
Compare two profiles of the same program: the lines and functions whose CPU time
changed by more than the sampling noise, slower ones first, by size of change.

A time measured with n samples is uncertain by about sigma = time/sqrt(n); a
change is shown only when |after - before| > K * sqrt(sigma_before^2 +
sigma_after^2) (K = --threshold-sigma), and when it passes the
Benjamini-Hochberg procedure over all the lines and functions compared, which
keeps the share of noise among the changes shown under Q (--fdr): two runs of
an unchanged program show no change. Lines are matched across edits of the
source by their function and text when their line numbers moved.

The html format is one self-contained page (sortable tables of regressions and
improvements, the changes within the noise folded away), written to a file:
AFTER's name with -diff.html next to it, unless -o says otherwise.
"""

EPILOG = """\
examples:
  spyglass diff before.json after.json
  spyglass diff --threshold-sigma 3 --format json -o diff.json old.json new.json
  spyglass diff --format html --open before.json after.json
"""

STYLES = {"slower": "red", "faster": "green", "noise": "", "muted": "dim", "heading": "bold"}
UNICODE = {"to": "→", "pm": "±", "sigma": "σ", "sqrt": "√"}
ASCII = {"to": "->", "pm": "+-", "sigma": "sigma", "sqrt": "sqrt "}


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="spyglass diff",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("before", metavar="BEFORE", help="the profile to compare against")
    p.add_argument("after", metavar="AFTER", help="the new profile")
    p.add_argument(
        "--format",
        choices=("terminal", "json", "html"),
        default="terminal",
        help="a report to read, every change as JSON, or a page for a browser (default: "
        "%(default)s)",
    )
    p.add_argument(
        "--threshold-sigma",
        type=number_between(0, 100),
        default=DEFAULT_THRESHOLD_SIGMA,
        metavar="K",
        help="flag changes larger than K standard deviations (default: %(default)g)",
    )
    p.add_argument(
        "--fdr",
        type=number_between(0.0001, 1),
        default=DEFAULT_FDR,
        metavar="Q",
        help="the false discovery rate: the largest expected share of noise among the "
        "changes shown (default: %(default)g)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write to FILE, not standard output (html: default AFTER's name with -diff.html)",
    )
    p.add_argument(
        "--open", action="store_true", help="html: open the written page in a web browser"
    )
    p.add_argument(
        "--limit", type=int_at_least(1), default=20, metavar="N", help="at most N rows per table"
    )
    p.add_argument("--no-color", action="store_true", help="no colours, even on a terminal")
    p.add_argument("--width", type=columns, default=80, metavar="N", help="columns (80)")
    return p


# --------------------------------------------------------------------------- terminal


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
            self.out(self.row(c, label))
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


def render_terminal(
    diff: Diff,
    out: TextIO,
    *,
    before: str,
    after: str,
    color: bool,
    width: int = 80,
    limit: int = 20,
) -> None:
    """Write the terminal report of ``diff`` to ``out``."""
    console = make_console(out, width=width, color=color)
    glyphs = UNICODE if supports_unicode(out) else ASCII
    _Report(console, diff, limit, glyphs).render(before, after)


# --------------------------------------------------------------------------- main


def html_path_for(after_path: str) -> str:
    """Where the html format goes by default: ``<after's stem>-diff.html`` next to it."""
    after = Path(after_path)
    return str(after.with_name(after.stem + "-diff.html"))


def _write_html(args: argparse.Namespace, diff: Diff, before: Profile, after: Profile) -> bool:
    from spyglass.reporters.diff_html import render_diff_html  # only the html format needs it

    target = args.output
    names = {"before_name": args.before, "after_name": args.after}
    write_output(target, render_diff_html(diff, before, after, **names))
    print(f"spyglass: HTML diff written to {escape_text(target)}", file=sys.stderr)
    return not args.open or open_in_browser(target, failing=True)


def _write(
    args: argparse.Namespace, diff: Diff, before: Profile, after: Profile, out: TextIO
) -> None:
    if args.format == "json":
        doc = diff_to_json(diff, before, after, before_name=args.before, after_name=args.after)
        text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)
        out.write(json_text_safe(text) + "\n")
    else:
        color = not args.no_color and args.output is None and should_use_color(out)
        names = {"before": escape_text(args.before), "after": escape_text(args.after)}
        render_terminal(diff, out, **names, color=color, width=args.width, limit=args.limit)


def _error(message: str) -> int:
    print(f"spyglass: error: {escape_text(message)}", file=sys.stderr)
    return EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``spyglass diff`` with ``argv`` (the arguments after "diff")."""
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (EXIT_OK if e.code is None else EXIT_ERROR)
    if args.open and args.format != "html":
        return _error("--open applies to the html format")
    if args.format == "html" and not args.output:
        args.output = html_path_for(args.after)  # a page is for a browser, not a terminal
    if args.output == STDOUT and args.format != "html":
        args.output = None
    try:
        before, after = load_profile(args.before), load_profile(args.after)
        if args.format == "terminal":
            before, after = escape_data(before), escape_data(after)
        diff = diff_profiles(before, after, threshold_sigma=args.threshold_sigma, fdr=args.fdr)
        if args.format == "html":
            if not _write_html(args, diff, before, after):
                return EXIT_ERROR
        elif args.output is None:
            _write(args, diff, before, after, sys.stdout)
            sys.stdout.flush()
        else:
            page = io.StringIO()  # whole before the file is touched: never half-written
            _write(args, diff, before, after, page)
            write_output(args.output, page.getvalue())
    except ProfileError as e:
        return _error(str(e))
    except BrokenPipeError:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
    except OSError as e:
        reason = (e.strerror or str(e)).lower()
        return _error(f"cannot write {args.output}: {reason}")
    except Exception as e:  # a bug: still one line, and no file was written
        return _error(f"internal error while comparing: {type(e).__name__}: {e}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
