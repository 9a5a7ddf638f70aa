"""The common `spyglass run` command lines, parsed without argparse.

argparse (with the re, gettext and shutil it imports) costs milliseconds, and every
millisecond before the program starts is start-up added to the program. Command lines
made only of the options below are read here; anything else (help, an unknown or
abbreviated option, a value argparse would refuse, a rarer option) goes to the full
parser, which also writes every error message. tests/unit/test_cli_run.py holds the two
to the same result."""

from __future__ import annotations

import sys

from spyglass._constants import (
    DEFAULT_INTERVAL_S,
    DEFAULT_MEMORY_WINDOW,
    MAX_INTERVAL_S,
    MIN_INTERVAL_S,
)
from spyglass.runtime.options import DEFAULT_OUTFILE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import SimpleNamespace
else:
    # types.SimpleNamespace, without importing types (a millisecond before the program
    # starts): the type of sys.implementation.
    SimpleNamespace = type(sys.implementation)

# The options of `spyglass run`, as the full parser (cli.run.build_parser) declares them;
# tests/unit/test_cli_run.py holds the two to the same names. Besides these, -m and -c
# name the target, and --html takes a value only when it names an HTML file.
# Options that take a value:
VALUE_OPTIONS = frozenset(
    {
        "-o",
        "--outfile",
        "--interval",
        "--memory-window",
        "--program-path",
        "--profile-only",
        "--profile-exclude",
        "--snapshot-every",
    }
)
# Flags without a value: the attribute each sets, and to what.
FLAGS = {
    "--no-report": ("no_report", True),
    "--no-color": ("no_color", True),
    "--open": ("open_browser", True),
    "--live": ("live", True),
    "--profile-all": ("profile_all", True),
    "--cpu-only": ("memory", False),
    "--no-memory": ("memory", False),
    "--memory": ("memory", True),
    "--no-group-threads": ("group_threads", False),
    "--gpu": ("gpu", True),
    "--no-gpu": ("gpu", False),
}
_MEMORY_MODES = ("--cpu-only", "--no-memory", "--memory")  # mutually exclusive
_GPU_MODES = ("--gpu", "--no-gpu")  # so are these
_TARGETS = {"-m": "module", "-c": "code"}


def defaults() -> SimpleNamespace:
    """What the full parser gives for an empty command line."""
    return SimpleNamespace(
        module=None,
        code=None,
        outfile=DEFAULT_OUTFILE,
        no_report=False,
        no_color=False,
        html=None,
        open_browser=False,
        group_threads=True,
        interval=DEFAULT_INTERVAL_S,
        memory=True,
        memory_window=DEFAULT_MEMORY_WINDOW,
        gpu=True,
        snapshot_every=None,
        live=False,
        program_path=[],
        profile_all=False,
        profile_only=[],
        profile_exclude=[],
        program=None,
        args=[],
    )


def _interval(value: str) -> float | None:
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if MIN_INTERVAL_S <= seconds <= MAX_INTERVAL_S else None


def parse(ours: list[str]) -> SimpleNamespace | None:
    """The namespace the full parser would make of `ours` (spyglass's own arguments, as
    cli.run._split_target_args leaves them), or None when it must be left to it."""
    ns = defaults()
    modes = set()
    gpu_modes = set()
    i = 0
    while i < len(ours):
        arg = ours[i]
        value = ours[i + 1] if i + 1 < len(ours) else None
        if arg in FLAGS:
            name, setting = FLAGS[arg]
            setattr(ns, name, setting)
            if arg in _MEMORY_MODES:
                modes.add(arg)
            if arg in _GPU_MODES:
                gpu_modes.add(arg)
            i += 1
            continue
        if arg == "--" and i == len(ours) - 2 and ns.module is None and ns.code is None:
            if value is None or value.startswith("-"):
                return None  # named like an option: the launcher leaves it to argparse too
            ns.program = value  # `run -- app.py`
            i += 2
            continue
        if arg.startswith("--html="):
            ns.html = arg[len("--html=") :]
            i += 1
            continue
        if not arg.startswith("-"):
            if i != len(ours) - 1 or ns.module is not None or ns.code is not None:
                return None
            ns.program = arg
            i += 1
            continue
        # The rest take a value, which argparse refuses when it looks like an option.
        if value is None or (value.startswith("-") and value != "-"):
            return None
        if arg in ("-o", "--outfile"):
            ns.outfile = value
        elif arg == "--html":
            ns.html = value
        elif arg == "--program-path":
            ns.program_path.append(value)
        elif arg == "--interval":
            seconds = _interval(value)
            if seconds is None:
                return None
            ns.interval = seconds
        elif arg in _TARGETS and i + 2 == len(ours):
            setattr(ns, _TARGETS[arg], value)
        else:
            return None
        i += 2
    if len(modes) > 1 or len(gpu_modes) > 1:
        return None  # argparse says which two are not allowed together
    return ns
