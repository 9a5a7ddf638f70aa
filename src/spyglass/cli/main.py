"""Entry point of the `spyglass` command and of `python -m spyglass`."""

from __future__ import annotations

import sys

USAGE = """\
usage: spyglass run [options] (script.py | -m module | -c code) [args...]
       spyglass view [options] profile.json
       spyglass merge profile.json... -o merged.json
       spyglass diff [options] before.json after.json
       spyglass --version

spyglass samples a Python program's CPU time per line and function, split into
Python (the interpreter), native (C code called from a line) and system (kernel)
time, plus time spent waiting, for every thread.

commands:
  run     profile a program and write a JSON profile (see: spyglass run --help)
  view    show a saved profile, or convert it to HTML, speedscope, collapsed stacks,
          pstats or JSON (see: spyglass view --help)
  merge   add up the profiles of several runs, processes or hosts
          (see: spyglass merge --help)
  diff    what got faster or slower between two profiles, beyond the noise
          (see: spyglass diff --help)
"""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command in ("--version", "-V"):
        from spyglass import __version__

        print(f"spyglass {__version__}")
        return 0
    if command == "run":
        from spyglass.cli.run import main as run_main

        return run_main(rest)
    if command == "view":
        from spyglass.cli.view import main as view_main

        return view_main(rest)
    if command == "merge":
        from spyglass.cli.merge import main as merge_main

        return merge_main(rest)
    if command == "diff":
        from spyglass.cli.diff import main as diff_main

        return diff_main(rest)
    hint = f" (did you mean 'spyglass run {command}'?)" if command.endswith(".py") else ""
    print(
        f"spyglass: error: unknown command {command!r}{hint}; try 'spyglass --help'",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
