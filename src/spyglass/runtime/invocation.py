"""What this interpreter was started to run (a script, `-m module`, `-c code` or standard
input), read from its own command line: a process of the run reports its own code as the
program's, whoever started it and however."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from collections.abc import Sequence

# Interpreter options that take a value (`-X dev`, `-W error`, `--check-hash-based-pycs
# never`): the value is not the program.
_WITH_VALUE = "XW"
_LONG_WITH_VALUE = ("--check-hash-based-pycs",)

# What multiprocessing runs with `-c` in the processes it starts for itself (spawn and
# forkserver workers, the resource tracker, the fork server): its code, not the user's.
_MULTIPROCESSING_CODE = ("from multiprocessing.",)
_HELPERS = (
    ("resource_tracker", "multiprocessing resource tracker"),
    ("forkserver", "multiprocessing fork server"),
)


def command_line() -> list[str]:
    """The interpreter's own argv, options included (sys.orig_argv before 3.10 did not
    exist: /proc has it)."""
    orig = getattr(sys, "orig_argv", None)
    if orig:
        return list(orig)
    try:
        with open(f"/proc/{os.getpid()}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return []
    return [os.fsdecode(a) for a in raw.split(b"\0")[:-1]]


def parse(argv: Sequence[str]) -> tuple[str, str]:
    """("script", path), ("module", name), ("code", source) or ("stdin", "") for an
    interpreter's argv; ("", "") when it cannot tell."""
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-":
            return "stdin", ""
        if arg == "--":
            return ("script", argv[i + 1]) if i + 1 < len(argv) else ("stdin", "")
        if not arg.startswith("-"):
            return "script", arg
        if arg.startswith("--"):
            i += 2 if arg in _LONG_WITH_VALUE else 1
            continue
        for j, flag in enumerate(arg[1:], start=1):
            if flag in "cm" or flag in _WITH_VALUE:
                attached = arg[j + 1 :]
                value = attached or (argv[i + 1] if i + 1 < len(argv) else "")
                if not attached:
                    i += 1
                if flag in "cm":
                    return ("code" if flag == "c" else "module"), value
                break
        i += 1
    return "stdin", ""


def interpreter_options(argv: Sequence[str]) -> list[str]:
    """The options an interpreter's argv gives the interpreter itself (`-O`, `-X dev`,
    `-W error`...), up to what it runs; without -i, which would leave another process
    waiting at a prompt."""
    found: list[str] = []
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in ("-", "--") or not arg.startswith("-"):
            break
        following = argv[i + 1] if i + 1 < len(argv) else ""
        if arg.startswith("--"):
            found += [arg, following] if arg in _LONG_WITH_VALUE else [arg]
            i += 2 if arg in _LONG_WITH_VALUE else 1
            continue
        for j, flag in enumerate(arg[1:], start=1):
            if flag in "cm":
                return found  # what it runs starts here
            if flag in _WITH_VALUE:
                attached = arg[j + 1 :]
                found += ["-" + flag, attached or following]
                i += 0 if attached else 1
                break
            if flag != "i":
                found.append("-" + flag)
        i += 1
    return found


def this_process() -> tuple[str, str]:
    """What this interpreter runs (see parse)."""
    argv = command_line()
    return parse(argv) if argv else ("", "")


def is_launcher_code(code: str) -> bool:
    """Whether `-c` code only starts someone else's: multiprocessing's (a worker's
    bootstrap, a helper), or a one-line loader that runs what it reads from standard input
    (execnet's, which pytest-xdist's workers run); the code it execs is "<string>" too."""
    text = code.strip()
    if is_multiprocessing_code(text):
        return True
    return "\n" not in text and "exec(" in text and "sys.stdin" in text


def is_multiprocessing_code(code: str) -> bool:
    """Whether `-c` code is multiprocessing's own start of a process (a spawn or forkserver
    worker, or a helper)."""
    return code.strip().startswith(_MULTIPROCESSING_CODE)


def helper_role(code: str) -> str:
    """What a process running multiprocessing's `-c` code is for, when it is one of the
    helpers multiprocessing starts for itself rather than a worker running the program's
    tasks; empty otherwise."""
    for module, role in _HELPERS:
        if code.lstrip().startswith(f"from multiprocessing.{module} import"):
            return role
    return ""


# `-m pytest tests/`: the program is the test suite, not the runner. The runner's own work
# (collecting, rewriting asserts, reporting) is not the user's code, as under the pytest
# plugin; the suite is where it is named, or in the working directory.
TEST_RUNNERS = frozenset({"pytest", "unittest", "nose2"})


def module_program_paths(name: str, args: Sequence[str]) -> list[str]:
    """The user's code of `python -m name args...`, the working directory aside: the
    module's package, or for a test runner the directories of the paths it is given
    (`tests/`, `tests/test_io.py::test_parse`)."""
    if name.partition(".")[0] not in TEST_RUNNERS:
        return module_paths(name)
    found = []
    for arg in args:
        path = arg.partition("::")[0]
        if arg.startswith("-") or not path or not os.path.exists(path):
            continue
        path = os.path.abspath(path)
        found.append(path if os.path.isdir(path) else os.path.dirname(path))
    return list(dict.fromkeys(found))


def module_paths(name: str) -> list[str]:
    """Where the top-level package of module `name` lives (its directories, or its file
    for a plain module); empty for built-in and frozen modules and ones not found. Only
    the top-level package is looked up: finding `pkg.sub` would import (run) `pkg`."""
    import importlib.machinery
    import importlib.util

    top = name.partition(".")[0]
    try:
        # `python -m` looks in the working directory first, which is not on sys.path yet
        # while site runs.
        spec = importlib.machinery.PathFinder.find_spec(top, [os.getcwd(), *sys.path])
        if spec is None:
            spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        found = [os.path.abspath(p) for p in spec.submodule_search_locations]
    elif spec.origin and spec.has_location:
        found = [os.path.abspath(spec.origin)]
    else:
        return []
    return found + _same_distribution(top, os.path.dirname(found[0]))


def _same_distribution(top: str, where: str) -> list[str]:
    """The other top-level packages and modules in `where` that the distribution holding
    `top` installed: pytest's work is in _pytest, black's parser in blib2to3. Read from the
    metadata directories themselves: importlib.metadata costs a process tens of
    milliseconds of start-up."""
    try:
        infos = [e for e in os.listdir(where) if e.endswith((".dist-info", ".egg-info"))]
    except OSError:
        return []
    wanted = top.lower().replace("_", "-")
    # The distribution named like its package first: nearly always the one.
    infos.sort(key=lambda e: not e.lower().replace("_", "-").startswith(wanted + "-"))
    for info in infos:
        tops = _top_levels(os.path.join(where, info))
        if top in tops:
            found = []
            for name in tops:
                for candidate in (os.path.join(where, name), os.path.join(where, name + ".py")):
                    if name != top and os.path.exists(candidate):
                        found.append(candidate)
            return found
    return []


def _top_levels(info: str) -> list[str]:
    """The top-level names a distribution installed (its top_level.txt, else its RECORD)."""
    try:
        with open(os.path.join(info, "top_level.txt"), encoding="utf-8") as f:
            return f.read().split()
    except OSError:
        pass
    try:
        with open(os.path.join(info, "RECORD"), encoding="utf-8") as f:
            firsts = {line.split(",", 1)[0].split("/", 1)[0] for line in f}
    except OSError:
        return []
    skip = (".dist-info", ".egg-info", ".pth", ".data")
    return sorted(
        p[: -len(".py")] if p.endswith(".py") else p
        for p in firsts
        if p and not p.endswith(skip) and p not in ("..", "__pycache__")
    )
