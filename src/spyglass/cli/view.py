"""``spyglass view``: show a saved profile again."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from spyglass.profile_io import ProfileError, load_profile
from spyglass.reporters import (
    DEFAULT_REPORTER,
    UnknownReporterError,
    available,
    render_report,
    should_use_color,
)

EXIT_OK = 0
EXIT_ERROR = 2

DESCRIPTION = """\
Show a profile that `spyglass run` saved (spyglass-profile.json by default).

Every percentage is a share of the run's total CPU time, split into Python
(the interpreter running your code), native (C extensions and libraries) and
system (the kernel working for the process). Wait is time threads spent off
the CPU: sleeping, doing I/O, blocked on locks or waiting for the GIL.
Figures marked ~ rest on fewer than 10 samples and are rough.
"""

EPILOG = """\
examples:
  spyglass view spyglass-profile.json
  spyglass view --width 120 run.json | less -S
  spyglass view --no-color run.json > report.txt
"""


def _width(value: str) -> int:
    try:
        width = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if width < 40:
        raise argparse.ArgumentTypeError(f"must be at least 40 columns, not {width}")
    return width


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spyglass view",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("profile", metavar="PROFILE", help="the JSON profile to show")
    parser.add_argument(
        "--format",
        default=DEFAULT_REPORTER,
        choices=available(),
        help="how to show it (default: %(default)s)",
    )
    parser.add_argument(
        "--no-color",
        action="store_true",
        help="no colours, even on a terminal (also: set NO_COLOR)",
    )
    parser.add_argument(
        "--width",
        type=_width,
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``spyglass view`` with ``argv`` (the arguments after "view"); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:  # --help, or a usage error already reported by argparse
        return e.code if isinstance(e.code, int) else (EXIT_OK if e.code is None else EXIT_ERROR)

    out = sys.stdout
    try:
        profile = load_profile(args.profile)
        color = not args.no_color and should_use_color(out)
        render_report(profile, out, format=args.format, color=color, width=args.width)
        out.flush()
    except (ProfileError, UnknownReporterError) as e:
        print(f"spyglass: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # e.g. `spyglass view p.json | head`
        _silence_stdout()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
