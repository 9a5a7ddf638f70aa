"""Entry point of the `spyglass` command and of `python -m spyglass`.

``COMMANDS`` is the one table of subcommands: each names the module whose ``main(argv)``
runs it (imported only when that command runs: `spyglass run` must start the program
quickly), how it is called and what it does; the usage text is made from it."""

from __future__ import annotations

import sys

from spyglass.cli.common import EXIT_ERROR, EXIT_OK

# name -> (module, synopsis after the name, what it does)
COMMANDS = {
    "run": (
        "spyglass.cli.run",
        "[options] (script.py | -m module | -c code) [args...]",
        "profile a program and write a JSON profile",
    ),
    "attach": (
        "spyglass.cli.attach",
        "[options] PID",
        "profile a running Python process for a while, then leave it running",
    ),
    "view": (
        "spyglass.cli.view",
        "[options] profile.json",
        "show a saved profile, or convert it to HTML, speedscope, collapsed stacks, pstats or JSON",
    ),
    "merge": (
        "spyglass.cli.merge",
        "profile.json... -o merged.json",
        "add up the profiles of several runs, processes or hosts",
    ),
    "diff": (
        "spyglass.cli.diff",
        "[options] before.json after.json",
        "what got faster or slower between two profiles, beyond the noise",
    ),
}

ABOUT = """\
spyglass samples a Python program's CPU time per line and function, split into
Python (the interpreter), native (C code called from a line) and system (kernel)
time, plus time spent waiting, for every thread."""


def usage() -> str:
    synopses = [f"spyglass {name} {synopsis}" for name, (_, synopsis, _) in COMMANDS.items()]
    lines = ["usage: " + synopses[0], *(f"       {s}" for s in synopses[1:])]
    lines += ["       spyglass --version", "", ABOUT, "", "commands:"]
    import textwrap

    for name, (_, _, summary) in COMMANDS.items():
        text = f"{summary} (see: spyglass {name} --help)"
        lines += textwrap.wrap(text, 80, initial_indent=f"  {name:<7} ", subsequent_indent=" " * 10)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage(), end="")
        return EXIT_OK if args else EXIT_ERROR
    command, rest = args[0], args[1:]
    if command in ("--version", "-V"):
        from spyglass import __version__

        print(f"spyglass {__version__}")
        return EXIT_OK
    if command in COMMANDS:
        # __import__ rather than importlib, which costs `spyglass run` its import.
        module = __import__(COMMANDS[command][0], fromlist=["main"])
        run: int = module.main(rest)
        return run
    hint = f" (did you mean 'spyglass run {command}'?)" if command.endswith(".py") else ""
    print(
        f"spyglass: error: unknown command {command!r}{hint}; try 'spyglass --help'",
        file=sys.stderr,
    )
    return EXIT_ERROR


def program() -> None:
    """The `spyglass` command and `python -m spyglass`: main(), then out at once. What is
    left to do when a command has returned is the interpreter's own finalisation (the
    modules a report imported, torn down one by one): some 10 ms after `spyglass run`'s
    report, which the shell would wait for. Everything spyglass writes is written and
    flushed by then."""
    from spyglass.runtime import launched

    launched.take()
    try:
        status = main()
    except SystemExit as e:  # argparse's errors and --help
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    launched.abandon_pending()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass  # closed, or gone: there is nothing left to write to it anyway
    import os

    os._exit(status)


if __name__ == "__main__":
    program()
