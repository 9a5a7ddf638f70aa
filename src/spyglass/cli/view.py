"""``spyglass view``: show a saved profile again, or convert it to another format."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from spyglass.cli._args import OneLineParser, columns, csv_list, int_at_least, number_between
from spyglass.cli.common import EXIT_ERROR, EXIT_OK, error, parse, path_beside, silence_stdout
from spyglass.outfile import STDOUT
from spyglass.profile_model import transforms
from spyglass.profile_model.io import Profile, ProfileError, load_profile
from spyglass.reporters import DEFAULT_REPORTER, FORMATS, UnknownReporterError
from spyglass.reporters.base import Reporter
from spyglass.runtime.options import DEFAULT_OUTFILE
from spyglass.runtime.output import open_in_browser
from spyglass.safe_text import escape_text

DEFAULT_PROFILE = DEFAULT_OUTFILE  # what `spyglass run` writes by default

# Beyond this, a terminal report is pages of rows under the noise that take minutes to
# lay out: --top (or another format) is what such a profile needs.
MAX_TERMINAL_LINES = 20_000
DESCRIPTION = """\
Show a profile that `spyglass run` saved (spyglass-profile.json by default), or
convert it: html (one self-contained page to open in a browser; written to a
file, PROFILE's name with .html unless -o says otherwise), speedscope
(https://www.speedscope.app), collapsed (folded stacks for flame-graph tools),
pstats (for pstats, snakeviz and other cProfile readers; its figures are
estimates from samples, see docs/formats.md), json (the profile, after the
options below).

Every percentage is a share of the run's total CPU time, split into Python
(the interpreter running your code), native (C extensions and libraries) and
system (the kernel working for the process). Wait is time threads spent off
the CPU: sleeping, doing I/O, blocked on locks or waiting for the GIL.
Figures marked ~ rest on fewer than 10 samples and are rough.
"""

EPILOG = """\
examples:
  spyglass view                       (spyglass-profile.json of this directory)
  spyglass view spyglass-profile.json
  spyglass view --width 120 run.json | less -S
  spyglass view --tree --min-share 2 run.json
  spyglass view --no-color run.json > report.txt
  spyglass view --html --open run.json
  spyglass view --html -o report.html run.json
  spyglass view --format speedscope -o run.speedscope.json run.json
  spyglass view --format collapsed run.json | flamegraph.pl > flame.svg
  spyglass view --format pstats -o run.pstats run.json && python -m pstats run.pstats
  spyglass view --profile-exclude site-packages --top 20 --format json -o small.json run.json
"""


def _format(value: str) -> str:
    names = FORMATS.available()
    if value in names:
        return value
    raise argparse.ArgumentTypeError(f"invalid choice: {value!r} (choose from {', '.join(names)})")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="spyglass view",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "profile",
        metavar="PROFILE",
        nargs="?",
        help=f"the JSON profile to show (default: {DEFAULT_PROFILE} here)",
    )
    names = FORMATS.available()
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--format",
        type=_format,
        metavar="{" + ",".join(names) + "}",
        help=f"how to show it (default: by the name -o gives, e.g. .html, .speedscope.json, "
        f".folded, .pstats; else {DEFAULT_REPORTER})",
    )
    which.add_argument("--html", action="store_true", help="the same as --format html")
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write to FILE instead of standard output (needed for pstats on a terminal; "
        "html: default PROFILE's name with .html)",
    )
    parser.add_argument(
        "--open",
        action="store_true",
        help="open the written file in a web browser (with -o, or for html)",
    )
    scope = parser.add_argument_group("what to keep (the totals stay the whole run's)")
    for option, what in (("only", "keep only files"), ("exclude", "leave out files")):
        scope.add_argument(
            f"--profile-{option}",
            type=csv_list,
            action="extend",
            default=[],
            metavar="SUBSTR,...",
            help=f"{what} whose path contains one of these (repeatable); their time "
            "becomes unattributed",
        )
    scope.add_argument(
        "--top",
        type=int_at_least(1),
        metavar="N",
        help="keep only the N costliest lines (by share of CPU, or of memory allocated)",
    )
    scope.add_argument(
        "--min-share",
        type=number_between(0, 100, "percentage"),
        metavar="PCT",
        help="hide lines below PCT%% of CPU and of wait (terminal default: 1)",
    )
    scope.add_argument("--collapse-threads", action="store_true", help="sum all threads into one")
    scope.add_argument(
        "--no-group-threads",
        dest="group_threads",
        action="store_false",
        help="terminal and html: one row per thread, rather than one per group of threads "
        "named alike but for their numbers (Thread-N (serve) x600)",
    )
    looks = parser.add_argument_group("presentation")
    looks.add_argument(
        "--weight",
        choices=("cpu", "samples", "wait"),
        help="collapsed only: weigh stacks by CPU microseconds (default), CPU samples "
        "or wait microseconds",
    )
    looks.add_argument(
        "--tree",
        action="store_true",
        help="terminal: the call tree (inclusive time through library code, down to where "
        "the time went), pruned below --min-share, instead of the files' lines",
    )
    looks.add_argument(
        "--no-color",
        action="store_true",
        help="no colours, even on a terminal (also: set NO_COLOR)",
    )
    looks.add_argument(
        "--width",
        type=columns,
        metavar="N",
        help="lay the report out in N columns (default: the terminal's width, or 80)",
    )
    return parser


def process(profile: Profile, args: argparse.Namespace, fmt: str) -> Profile:
    """``profile`` after the options that select what to keep."""
    profile = transforms.restrict_files(profile, args.profile_only, args.profile_exclude)
    if args.min_share is not None and fmt != "terminal":  # the terminal hides rows itself
        profile = transforms.hide_idle_lines(profile, args.min_share)
    if args.top is not None:
        profile = transforms.keep_top_lines(profile, args.top)
    if args.collapse_threads:
        profile = transforms.collapse_threads(profile)
    return profile


def _reporter(fmt: str, args: argparse.Namespace) -> Reporter[Profile]:
    """The reporter of format ``fmt``, made with the view's options that it takes."""
    options: dict[str, Any] = {}
    if fmt == "terminal":
        options.update(group_threads=args.group_threads, tree=args.tree, width=args.width)
        if args.no_color:
            options["color"] = False
        if args.min_share is not None:
            options["min_percent"] = args.min_share
    elif fmt == "html":
        options["group_threads"] = args.group_threads
    elif fmt == "collapsed" and args.weight is not None:
        options["weight"] = args.weight
    return FORMATS.create(fmt, **options)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _too_many_lines(profile: Profile, name: str) -> str | None:
    """Why the terminal report of `profile` would be too long to be of use (and would
    take minutes to lay out), or None."""
    lines = sum(len(entry["lines"]) for entry in profile["files"].values())
    if lines <= MAX_TERMINAL_LINES:
        return None
    return (
        f"{name} has {lines} lines in {len(profile['files'])} files, too many for a terminal "
        "report: show the costliest with --top N, narrow it with --profile-only, or write "
        "it with --format html -o FILE"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``spyglass view`` with ``argv`` (the arguments after "view"); return the exit code."""
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    if args.profile is None:
        if not os.path.isfile(DEFAULT_PROFILE):
            return error(
                f"no profile given, and no {DEFAULT_PROFILE} in this directory "
                "(spyglass run writes one; see 'spyglass view --help')"
            )
        args.profile = DEFAULT_PROFILE
    to_file = args.output and args.output != STDOUT
    by_name = FORMATS.format_for_path(args.output) if to_file else None
    fmt: str = "html" if args.html else args.format or by_name or DEFAULT_REPORTER
    if args.open and not args.output and fmt != "html":
        return error("--open needs -o FILE (or the html format)")
    if args.tree and fmt != "terminal":
        return error(f"--tree applies to the terminal format, not to {fmt}")
    if args.weight is not None and fmt != "collapsed":
        return error(f"--weight applies to the collapsed format, not to {fmt}")

    out = sys.stdout
    # The html format always goes to a file: a page is for a browser, not a terminal.
    page_path = path_beside(args.profile, FORMATS.extensions("html")[0])
    target: str | None = args.output or (page_path if fmt == "html" else None)
    if target == STDOUT:
        if args.open:
            return error("--open needs a file to open, not standard output")
        target = None
    try:
        profile = process(load_profile(args.profile), args, fmt)
        if fmt == "terminal" and args.top is None:
            crowded = _too_many_lines(profile, args.profile)
            if crowded:
                return error(crowded)
        reporter = _reporter(fmt, args)
        if target is not None:
            reporter.write(profile, target)  # made whole before the file is touched
            if fmt == "html":
                print(f"spyglass: HTML report written to {escape_text(target)}", file=sys.stderr)
            if args.open and not open_in_browser(target, failing=True):
                return EXIT_ERROR
            return EXIT_OK
        if reporter.binary and _isatty(out):
            return error(f"the {fmt} format is binary: write it to a file with -o FILE")
        reporter.write(profile, out)
    except (ProfileError, UnknownReporterError) as e:
        return error(e)
    except BrokenPipeError:  # e.g. `spyglass view p.json | head`
        silence_stdout()
    except OSError as e:
        name = e.filename if e.filename is not None else target
        return error(f"cannot write {name}: {(e.strerror or str(e)).lower()}")
    except Exception as e:  # a bug: still one line, and no file was written
        return error(f"internal error while rendering {args.profile}: {type(e).__name__}: {e}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
