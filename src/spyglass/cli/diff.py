"""``spyglass diff``: what got faster or slower between two profiles, beyond the noise."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from spyglass.cli._args import OneLineParser, columns, int_at_least, number_between
from spyglass.cli.common import EXIT_ERROR, EXIT_OK, error, parse, path_beside, silence_stdout
from spyglass.outfile import STDOUT
from spyglass.profile_model.diffing import DEFAULT_FDR, DEFAULT_THRESHOLD_SIGMA, diff_profiles
from spyglass.profile_model.io import ProfileError, load_profile
from spyglass.reporters import DIFF_FORMATS
from spyglass.reporters.base import Reporter
from spyglass.reporters.comparison import Comparison
from spyglass.runtime.output import open_in_browser
from spyglass.safe_text import escape_text

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
        choices=DIFF_FORMATS.available(),
        help="a report to read, every change as JSON, or a page for a browser (default: by "
        "the name -o gives, .json or .html; else terminal)",
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


def _reporter(fmt: str, args: argparse.Namespace) -> Reporter[Comparison]:
    if fmt == "terminal":
        color = False if args.no_color else None
        return DIFF_FORMATS.create(fmt, color=color, width=args.width, limit=args.limit)
    return DIFF_FORMATS.create(fmt)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``spyglass diff`` with ``argv`` (the arguments after "diff")."""
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    to_file = args.output is not None and args.output != STDOUT
    by_name = DIFF_FORMATS.format_for_path(args.output) if to_file else None
    fmt: str = args.format or by_name or "terminal"
    if args.open and fmt != "html":
        return error("--open applies to the html format")
    target: str | None = args.output
    if fmt == "html" and not target:  # a page is for a browser, not a terminal
        target = path_beside(args.after, "-diff" + DIFF_FORMATS.extensions("html")[0])
    if target == STDOUT and fmt != "html":
        target = None
    try:
        before, after = load_profile(args.before), load_profile(args.after)
        diff = diff_profiles(before, after, threshold_sigma=args.threshold_sigma, fdr=args.fdr)
        doc = Comparison(diff, before, after, before_name=args.before, after_name=args.after)
        reporter = _reporter(fmt, args)
        if target is None:
            reporter.write(doc, sys.stdout)
            return EXIT_OK
        reporter.write(doc, target)  # made whole before the file is touched
        if fmt == "html":
            print(f"spyglass: HTML diff written to {escape_text(target)}", file=sys.stderr)
            if args.open and not open_in_browser(target, failing=True):
                return EXIT_ERROR
    except ProfileError as e:
        return error(str(e))
    except BrokenPipeError:
        silence_stdout()
    except OSError as e:
        reason = (e.strerror or str(e)).lower()
        return error(f"cannot write {target}: {reason}")
    except Exception as e:  # a bug: still one line, and no file was written
        return error(f"internal error while comparing: {type(e).__name__}: {e}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
