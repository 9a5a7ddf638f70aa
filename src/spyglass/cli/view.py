"""``spyglass view``: show a saved profile again, or convert it to another format."""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Sequence
from typing import Any

from spyglass.cli._args import columns, csv_list, int_at_least, number_between
from spyglass.outfile import STDOUT, write_output
from spyglass.profile_model import transforms
from spyglass.profile_model.io import Profile, ProfileError, load_profile
from spyglass.reporters import (
    DEFAULT_REPORTER,
    Reporter,
    UnknownReporterError,
    available,
    format_for_path,
    get_reporter,
    should_use_color,
)
from spyglass.runtime.output import open_in_browser
from spyglass.safe_text import escape_data, escape_text, json_text_safe

EXIT_OK = 0
EXIT_ERROR = 2
DEFAULT_PROFILE = "spyglass-profile.json"  # what `spyglass run` writes by default

# Formats whose output is JSON: their data is kept as it is (JSON escapes C0 controls),
# with the few characters JSON leaves raw escaped too. Every other text format gets its
# data escaped (safe_text).
_JSON_FORMATS = ("json", "speedscope")
# Beyond this, a terminal report is pages of rows under the noise that take minutes to
# lay out: --top (or another format) is what such a profile needs.
MAX_TERMINAL_LINES = 20_000
# Formats that carry the data exactly as it is, for a program to read.
_EXACT_FORMATS = (*_JSON_FORMATS, "html", "pstats")

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
    names = available()
    if value in names:
        return value
    raise argparse.ArgumentTypeError(f"invalid choice: {value!r} (choose from {', '.join(names)})")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    names = available()
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


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so exiting does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


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


def _reporter(fmt: str, args: argparse.Namespace) -> Reporter:
    if fmt == "terminal" and (args.min_share is not None or not args.group_threads or args.tree):
        from spyglass.profile_model import queries as processors
        from spyglass.reporters.terminal import TerminalReporter

        share = processors.MIN_PERCENT if args.min_share is None else args.min_share
        return TerminalReporter(min_percent=share, group_threads=args.group_threads, tree=args.tree)
    if fmt == "html" and not args.group_threads:
        from spyglass.reporters.html import HtmlReporter

        return HtmlReporter(group_threads=False)
    if fmt == "collapsed" and args.weight is not None:
        from spyglass.reporters.collapsed import CollapsedReporter

        return CollapsedReporter(weight=args.weight)
    return get_reporter(fmt)


def rendered(reporter: Reporter, profile: Profile, width: int | None) -> str | bytes:
    """The whole output of ``reporter`` for a file (no colour): made in memory first, so
    that a renderer that fails leaves no file behind, half-written or emptied."""
    if getattr(reporter, "binary", False):
        raw = io.BytesIO()
        text = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
        reporter.render(profile, text, color=False, width=width)
        text.flush()
        return raw.getvalue()
    page = io.StringIO()
    reporter.render(profile, page, color=False, width=width)
    return page.getvalue()


def write_file(
    fmt: str, reporter: Reporter, profile: Profile, path: str, width: int | None
) -> None:
    """Write ``profile`` in format ``fmt`` to ``path`` (``-``: standard output) without
    harming what is there: spyglass.outfile."""
    data = rendered(reporter, profile, width)
    if isinstance(data, str) and fmt in _JSON_FORMATS:
        data = json_text_safe(data)
    write_output(path, data)


def html_path_for(profile_path: str) -> str:
    """Where the html format goes by default: ``profile_path`` with .html for its extension
    (never ``profile_path`` itself)."""
    path = os.path.splitext(profile_path)[0] + ".html"
    return path if path != profile_path else profile_path + ".html"


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


def _error(message: object) -> int:
    print(f"spyglass: error: {escape_text(str(message))}", file=sys.stderr)
    return EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``spyglass view`` with ``argv`` (the arguments after "view"); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:  # --help, or a usage error already reported by argparse
        return e.code if isinstance(e.code, int) else (EXIT_OK if e.code is None else EXIT_ERROR)
    if args.profile is None:
        if not os.path.isfile(DEFAULT_PROFILE):
            return _error(
                f"no profile given, and no {DEFAULT_PROFILE} in this directory "
                "(spyglass run writes one; see 'spyglass view --help')"
            )
        args.profile = DEFAULT_PROFILE
    by_name = format_for_path(args.output) if args.output and args.output != STDOUT else None
    fmt: str = "html" if args.html else args.format or by_name or DEFAULT_REPORTER
    if args.open and not args.output and fmt != "html":
        return _error("--open needs -o FILE (or the html format)")
    if args.tree and fmt != "terminal":
        return _error(f"--tree applies to the terminal format, not to {fmt}")
    if args.weight is not None and fmt != "collapsed":
        return _error(f"--weight applies to the collapsed format, not to {fmt}")

    out = sys.stdout
    # The html format always goes to a file: a page is for a browser, not a terminal.
    target: str | None = args.output or (html_path_for(args.profile) if fmt == "html" else None)
    if target == STDOUT:
        if args.open:
            return _error("--open needs a file to open, not standard output")
        target = None
    try:
        profile = process(load_profile(args.profile), args, fmt)
        if fmt == "terminal" and args.top is None:
            crowded = _too_many_lines(profile, args.profile)
            if crowded:
                return _error(crowded)
        if fmt not in _EXACT_FORMATS:
            profile = escape_data(profile)
        reporter = _reporter(fmt, args)
        if target is not None:
            write_file(fmt, reporter, profile, target, args.width)
            if fmt == "html":
                print(f"spyglass: HTML report written to {escape_text(target)}", file=sys.stderr)
            if args.open and not open_in_browser(target, failing=True):
                return EXIT_ERROR
            return EXIT_OK
        if getattr(reporter, "binary", False) and _isatty(out):
            return _error(f"the {fmt} format is binary: write it to a file with -o FILE")
        color = not args.no_color and should_use_color(out)
        if fmt in _JSON_FORMATS:
            out.write(json_text_safe(str(rendered(reporter, profile, args.width))))
        else:
            reporter.render(profile, out, color=color, width=args.width)
        out.flush()
    except (ProfileError, UnknownReporterError) as e:
        return _error(e)
    except BrokenPipeError:  # e.g. `spyglass view p.json | head`
        _silence_stdout()
    except OSError as e:
        name = e.filename if e.filename is not None else target
        return _error(f"cannot write {name}: {(e.strerror or str(e)).lower()}")
    except Exception as e:  # a bug: still one line, and no file was written
        return _error(f"internal error while rendering {args.profile}: {type(e).__name__}: {e}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
