"""``spyglass merge``: add several profiles up into one."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from spyglass.cli._args import OneLineParser
from spyglass.cli.common import EXIT_ERROR, EXIT_OK, error, parse
from spyglass.profile_model.io import ProfileError, dump_profile, load_profile

DESCRIPTION = """\
Add the profiles of several runs, processes or hosts up into one profile, which
`spyglass view` (and every other format) reads like any other.

Times and samples are summed per line, function, file and stack; threads stay
apart, their names prefixed with the input's label (its file name). The merged
profile's elapsed time is the wall time during which at least one input ran
(from their start times), and `elapsed_s_total` the sum; `sources` lists the
inputs and the host each ran on. A library's files installed under different
prefixes (a virtual environment per host) count as one file. See docs/formats.md.
"""

EPILOG = """\
examples:
  spyglass merge worker-*.json -o all.json
  spyglass merge host1/profile.json host2/profile.json -o - | spyglass view /dev/stdin
"""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="spyglass merge",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("profiles", nargs="+", metavar="PROFILE", help="the profiles to add up")
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="where to write the merged profile ('-' for standard output)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``spyglass merge`` with ``argv`` (the arguments after "merge")."""
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    from spyglass.profile_model.merging import merge_profiles

    try:
        profiles = [load_profile(path) for path in args.profiles]
        merged = merge_profiles(profiles, names=args.profiles)
        dump_profile(merged, args.output)
    except ProfileError as e:
        return error(e)
    except BrokenPipeError:
        return EXIT_ERROR
    except Exception as e:  # a bug: still one line, and no file was written
        print(f"spyglass: internal error while merging: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
