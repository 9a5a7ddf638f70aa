"""`spyglass run`: profile a program."""

from __future__ import annotations

import os
import sys

from spyglass._constants import (
    DEFAULT_INTERVAL_S,
    DEFAULT_MEMORY_WINDOW,
    MAX_INTERVAL_S,
    MIN_INTERVAL_S,
)
from spyglass.cli.common import error, path_beside
from spyglass.reporters import FORMATS
from spyglass.runtime.options import DEFAULT_OUTFILE, ProfileOptions
from spyglass.runtime.target import Target

# Rewriting the profile merges every process's journal so far: more often than this would
# spend the machine on snapshots.
MIN_SNAPSHOT_EVERY_S = 0.1

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    # Imported where used: the common command lines never need argparse (run_quick_args).
    import argparse
    from typing import Any

DESCRIPTION = """\
Run a Python program under the profiler. The program's own output and exit status
are unchanged; the report goes to stderr and the profile to a JSON file (and, with
--html, to a self-contained HTML page as well).

examples:
  spyglass run app.py --its-own-flag
  spyglass run -m http.server 8000
  spyglass run --interval 0.005 -o prof.json -c "import slow; slow.main()"
  spyglass run --html --open app.py
  spyglass run --html report.html -o prof.json app.py
"""

# The names --html takes for its value: the html format's (cheap: the registry imports no
# reporter to say them).
HTML_SUFFIXES = FORMATS.extensions("html")


def _snapshot_every(value: str) -> float:
    import argparse

    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not seconds >= MIN_SNAPSHOT_EVERY_S:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be at least {MIN_SNAPSHOT_EVERY_S:g} seconds")
    return seconds


def _interval(value: str) -> float:
    import argparse

    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not MIN_INTERVAL_S <= seconds <= MAX_INTERVAL_S:
        raise argparse.ArgumentTypeError(
            f"must be between {MIN_INTERVAL_S:g} and {MAX_INTERVAL_S:g} seconds"
        )
    return seconds


def build_parser() -> argparse.ArgumentParser:
    import argparse

    from spyglass.cli._args import OneLineParser, byte_size, csv_list, size_text

    p = OneLineParser(
        prog="spyglass run",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        # No abbreviations: _split_target_args must see the options as argparse does
        # (with them, "--htm app.py" would give app.py to --html as its value).
        allow_abbrev=False,
    )
    what = p.add_argument_group("what to run (one of)")
    what.add_argument(
        "-m", dest="module", metavar="MODULE", help="run a library module as a script"
    )
    what.add_argument("-c", dest="code", metavar="CODE", help="run a program passed as a string")
    out = p.add_argument_group("output")
    out.add_argument(
        "-o",
        "--outfile",
        default=DEFAULT_OUTFILE,
        help=f"where to write the JSON profile, - for standard output (default: "
        f"./{DEFAULT_OUTFILE})",
    )
    out.add_argument(
        "--no-report", action="store_true", help="write the JSON profile only, no terminal report"
    )
    out.add_argument("--no-color", action="store_true", help="never colour the report")
    out.add_argument(
        "--no-group-threads",
        dest="group_threads",
        action="store_false",
        help="one row per thread in the reports, rather than one per group of threads "
        "named alike but for their numbers",
    )
    out.add_argument(
        "--html",
        nargs="?",
        const="",
        metavar="FILE",
        help="write an HTML report too, to FILE (a name ending in .html or .htm) or by "
        "default next to the JSON profile, with .html for its extension",
    )
    out.add_argument(
        "--snapshot-every",
        type=_snapshot_every,
        metavar="SECONDS",
        help="while the program runs, rewrite the profile (and the HTML report, if asked "
        "for) this often, so that a long-running program can be looked at without stopping "
        "it; each file is replaced whole",
    )
    out.add_argument(
        "--live",
        action="store_true",
        help="while the program runs, show its hottest lines and functions on the terminal, "
        "redrawn about once a second (stderr must be a terminal); the report follows at "
        "the end as usual",
    )
    out.add_argument(
        "--open",
        dest="open_browser",
        action="store_true",
        help="open the HTML report in a web browser when done (implies --html)",
    )
    samp = p.add_argument_group("sampling")
    samp.add_argument(
        "--interval",
        type=_interval,
        default=DEFAULT_INTERVAL_S,
        metavar="SECONDS",
        help=f"CPU time between samples of each thread (default: {DEFAULT_INTERVAL_S:g})",
    )
    mode = samp.add_mutually_exclusive_group()
    mode.add_argument(
        "--cpu-only",
        dest="memory",
        action="store_false",
        help="profile CPU time only: no allocation or copy profiling",
    )
    mode.add_argument(
        "--memory",
        dest="memory",
        action="store_true",
        help="profile allocations, footprint, leaks and copies as well as CPU (the default)",
    )
    mode.add_argument(
        "--no-memory", dest="memory", action="store_false", help="the same as --cpu-only"
    )
    samp.set_defaults(memory=True)
    gpu = samp.add_mutually_exclusive_group()
    gpu.add_argument(
        "--gpu",
        dest="gpu",
        action="store_true",
        help="profile GPU utilisation and memory per line where NVIDIA's NVML library loads "
        "(the default; nothing is loaded or run where it does not)",
    )
    gpu.add_argument("--no-gpu", dest="gpu", action="store_false", help="no GPU profiling")
    samp.set_defaults(gpu=True)
    samp.add_argument(
        "--memory-window",
        type=byte_size,
        default=DEFAULT_MEMORY_WINDOW,
        metavar="SIZE",
        help="memory sampling rate: mean bytes allocated between two memory samples (it grows "
        "on runs that allocate a lot): a number of bytes or with a K, M or G suffix "
        f"(default: {size_text(DEFAULT_MEMORY_WINDOW)})",
    )
    scope = p.add_argument_group("which code is reported")
    scope.add_argument(
        "--program-path",
        action="append",
        default=[],
        metavar="DIR",
        help="directory of your own code (default: the script's directory, or the current "
        "directory for -m/-c); the standard library and installed packages are excluded. "
        "Repeatable.",
    )
    scope.add_argument(
        "--profile-all", action="store_true", help="report every file, libraries included"
    )
    scope.add_argument(
        "--profile-only",
        type=csv_list,
        default=[],
        metavar="SUBSTR,...",
        help="report only files whose path contains one of these",
    )
    scope.add_argument(
        "--profile-exclude",
        type=csv_list,
        default=[],
        metavar="SUBSTR,...",
        help="never report files whose path contains one of these",
    )
    p.add_argument(
        "program", nargs="?", help="the script to profile (-: read the program from stdin)"
    )
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the program")
    return p


def _is_script_name(arg: str) -> bool:
    return arg.lower().endswith((".py", ".pyw", ".pyz", ".zip"))


def _is_html_name(arg: str) -> bool:
    return not arg.startswith("-") and arg.lower().endswith(HTML_SUFFIXES)


def _split_target_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """Separates spyglass's options from the target and its arguments: everything from the
    script name, or from -m/-c and their value, on belongs to the target.

    --html takes its value only when the next argument names an HTML file (so that in
    `spyglass run --html app.py` app.py is the script); without one it becomes "--html=",
    so that argparse does not take the script for its value either."""
    from spyglass.cli.run_quick_args import VALUE_OPTIONS

    ours: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":  # options end: the script comes next
            rest = argv[i + 1 :]
            return ([*ours, "--", rest[0]], rest[1:]) if rest else (ours, [])
        if arg in ("-m", "-c"):
            return ours + argv[i : i + 2], argv[i + 2 :]
        if arg.startswith(("-m", "-c")) and not arg.startswith("--") and len(arg) > 2:
            return [*ours, arg[:2], arg[2:]], argv[i + 1 :]
        if not arg.startswith("-") or arg == "-":
            return [*ours, arg], argv[i + 1 :]
        if arg == "--html":
            if i + 1 < len(argv) and _is_html_name(argv[i + 1]):
                ours += [arg, argv[i + 1]]
                i += 2
            else:
                ours.append("--html=")
                i += 1
            continue
        ours.append(arg)
        if arg in VALUE_OPTIONS and i + 1 < len(argv):
            ours.append(argv[i + 1])
            i += 1
        i += 1
    return ours, []


def main(argv: list[str]) -> int:
    from spyglass.cli import run_quick_args

    ours, target_args = _split_target_args(argv)
    quick = run_quick_args.parse(ours)
    ns: Any = quick if quick is not None else build_parser().parse_args(ours)
    given = [x for x in (ns.module, ns.code, ns.program) if x is not None]
    if len(given) != 1:
        build_parser().error("give exactly one of: a script, -m MODULE, -c CODE")
    if ns.module is not None:
        target = Target("module", ns.module, target_args)
    elif ns.code is not None:
        target = Target("code", ns.code, target_args)
    elif ns.program == "-":  # as `python -`: the program is what stdin holds
        try:
            source = sys.stdin.buffer.read()  # as bytes: its coding cookie is the program's
        except OSError as e:
            return error(f"cannot read the program from stdin: {e}")
        target = Target("stdin", "-", target_args, source=source)
    else:
        target = Target("script", ns.program, target_args)
        if ns.html == "" and not os.path.exists(ns.program) and not _is_script_name(ns.program):
            # `--html report.txt app.py`: --html took no value (the name is not .html), so
            # report.txt became the script. Say so rather than "can't open file".
            return error(
                f"{ns.program!r} was taken as the script to profile, as --html only takes a "
                f"name ending in {' or '.join(HTML_SUFFIXES)}; write --html={ns.program} to "
                "name the report so"
            )

    from spyglass.outfile import STDOUT, check_writable

    problem = check_writable(ns.outfile)
    if problem:
        return error(problem)
    html = ns.html
    if html is None and ns.open_browser:
        html = ""
    to_stdout = ns.outfile == STDOUT
    if html is not None:
        html = html or path_beside(DEFAULT_OUTFILE if to_stdout else ns.outfile, HTML_SUFFIXES[0])
        html = html if html == STDOUT else os.path.abspath(html)
        if html == (ns.outfile if to_stdout else os.path.abspath(ns.outfile)):
            return error(f"the HTML report and the profile are the same file: {html!r}")
        problem = check_writable(html, "the HTML report")
        if problem:
            return error(problem)
    if to_stdout and ns.snapshot_every is not None:
        return error("--snapshot-every rewrites the profile file: give -o a file, not -")
    named = None if to_stdout else FORMATS.format_for_path(ns.outfile)
    if named not in (None, "json"):
        # `-o report.html`: the profile would go, as JSON, into a file named for a report.
        hint = f"--html {ns.outfile}" if named == "html" else f"spyglass view -o {ns.outfile}"
        return error(
            f"-o writes the JSON profile, and {ns.outfile!r} names a {named} file: "
            f"give -o a .json name (for the {named} report: {hint})"
        )
    for d in ns.program_path:
        if not os.path.isdir(d):
            return error(f"--program-path {d!r} is not a directory")
    options = ProfileOptions(
        interval_s=ns.interval,
        memory=ns.memory,
        memory_window=ns.memory_window,
        gpu=ns.gpu,
        outfile=ns.outfile if to_stdout else os.path.abspath(ns.outfile),
        program_paths=[os.path.realpath(d) for d in ns.program_path],
        profile_all=ns.profile_all,
        profile_only=ns.profile_only,
        profile_exclude=ns.profile_exclude,
        report=not ns.no_report,
        color=False if ns.no_color else None,
        html=html,
        open_browser=ns.open_browser,
        group_threads=ns.group_threads,
        snapshot_every=ns.snapshot_every,
        live=ns.live,
    )
    from spyglass.runtime.supervisor import Supervisor

    return Supervisor(target, options).run()
