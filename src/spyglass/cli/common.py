"""What the commands share: exit codes, one-line errors, a parsed command line or the
status argparse left with, where a report goes by default, and a closed pipe survived.
(Opening a browser is runtime.output.open_in_browser, which `spyglass run` uses too.)"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing costs milliseconds of start-up
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

EXIT_OK = 0
EXIT_ERROR = 2  # a bad command line or input, as argparse exits


def error(message: object) -> int:
    """Say ``message`` on stderr in one line (escaped: it may hold a file's name) and
    return the error exit status."""
    from spyglass.safe_text import escape_text  # re costs `spyglass run` start-up time

    print(f"spyglass: error: {escape_text(str(message))}", file=sys.stderr)
    return EXIT_ERROR


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace | int:
    """``argv`` (default: the process's arguments) parsed, or the exit status after --help
    or a usage error argparse has already reported."""
    try:
        return parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:
        if isinstance(e.code, int):
            return e.code
        return EXIT_OK if e.code is None else EXIT_ERROR


def path_beside(path: str, ending: str) -> str:
    """Where a report of the file ``path`` goes by default: ``path`` with ``ending`` for
    its extension, never ``path`` itself (``run.json`` -> ``run.html``)."""
    beside = os.path.splitext(path)[0] + ending
    return beside if beside != path else path + ending


def silence_stdout() -> None:
    """After a broken pipe (``spyglass view p.json | head``), point stdout at /dev/null so
    that exiting does not complain again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


__all__ = ["EXIT_ERROR", "EXIT_OK", "error", "parse", "path_beside", "silence_stdout"]
