"""`%load_ext spyglass`, then `%spyglass [options] statement` and `%%spyglass [options]`.

The code runs in the user's namespace under the profiler, memory included, and the report
is shown where the cell's output goes (notebook_report). The cell is the user's code: its
code is compiled under the cell's own name, at the lines where the user sees it, and
the cell's text as typed replaces IPython's transformed text in linecache, so that the
report shows `In [7]` line 3 with its source.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import linecache
import os
import re
import sys
from types import CodeType, FrameType
from typing import Any, NoReturn

from spyglass import api
from spyglass._native import DEFAULT_INTERVAL_S, DEFAULT_MEMORY_WINDOW
from spyglass.cli._args import byte_size, number_between
from spyglass.integrations import cells
from spyglass.profile_model.compact import expanded
from spyglass.runtime.options import ProfileOptions

USAGE = """\
%spyglass [options] statement      profile one statement
%%spyglass [options]               profile the cell below the line

options (as in `spyglass run`):
  -o, --outfile FILE    write the JSON profile to FILE as well
  --html FILE           write the self-contained HTML report to FILE as well
  --interval SECONDS    CPU time between samples of each thread (default 0.01)
  --cpu-only            CPU only: no allocation, footprint or copy profiling
  --memory-window SIZE  mean bytes allocated between two memory samples (default 64K)
  --no-gpu              no GPU profiling (on by default where NVIDIA's NVML loads)
  --program-path DIR    a directory of your own code, besides the current one (repeatable)
  --profile-all         report every file, libraries included"""

_TAKES_VALUE = {"-o", "--outfile", "--html", "--interval", "--memory-window", "--program-path"}
_TOKEN = re.compile(r"""\s*('[^']*'|"[^"]*"|\S+)""")
# What code compiled by the magic itself is named when the cell it came from is unknown.
_OWN_NAME = "<spyglass-cell-{number}-{serial}>"
_serials = itertools.count(1)


class MagicUsageError(ValueError):
    """A bad magic line: shown as one line, with no traceback."""


class _HelpShown(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise MagicUsageError(f"{message} (see %spyglass --help)")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise _HelpShown


def _parser() -> _Parser:
    p = _Parser(prog="%spyglass", add_help=False, allow_abbrev=False)
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("-o", "--outfile")
    p.add_argument("--html")
    p.add_argument(
        "--interval",
        type=number_between(0.001, 10, "number of seconds"),
        default=DEFAULT_INTERVAL_S,
    )
    p.add_argument("--memory-window", type=byte_size, default=DEFAULT_MEMORY_WINDOW)
    p.add_argument("--cpu-only", "--no-memory", dest="memory", action="store_false")
    p.add_argument("--memory", dest="memory", action="store_true")
    p.add_argument("--gpu", dest="gpu", action="store_true", default=True)
    p.add_argument("--no-gpu", dest="gpu", action="store_false")
    p.add_argument("--program-path", action="append", default=[])
    p.add_argument("--profile-all", action="store_true")
    return p


def split_options(line: str) -> tuple[list[str], str]:
    """The options at the start of a magic's line, and the statement after them (from
    the first word that is not an option, or after "--")."""
    args: list[str] = []
    pos = 0
    wants_value = False
    while (m := _TOKEN.match(line, pos)) is not None:
        token = m.group(1)
        if wants_value:
            quoted = len(token) >= 2 and token[0] == token[-1] and token[0] in "'\""
            args.append(token[1:-1] if quoted else token)
            wants_value = False
        elif token == "--":
            pos = m.end()
            break
        elif token.startswith("-"):
            args.append(token)
            wants_value = token in _TAKES_VALUE
        else:
            break
        pos = m.end()
    return args, line[pos:].strip()


def parse_line(line: str) -> tuple[argparse.Namespace, str]:
    """The magic's options and statement; MagicUsageError for bad ones."""
    args, statement = split_options(line)
    ns = _parser().parse_args(args)
    if ns.help:
        raise _HelpShown
    for d in ns.program_path:
        if not os.path.isdir(d):
            raise MagicUsageError(f"--program-path {d!r} is not a directory")
    from spyglass.outfile import check_writable

    for path, what in ((ns.outfile, "the profile"), (ns.html, "the HTML report")):
        problem = check_writable(path, what) if path is not None else None
        if problem:
            raise MagicUsageError(problem)
    return ns, statement


def _calling_cell(shell: Any, numbers: dict[str, int]) -> tuple[str, int] | None:
    """The name of the cell whose code called the magic, and the line it called it from."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if cells.label_of(name, numbers) is not None:
            return name, frame.f_lineno
        frame = frame.f_back
    return None


def _number_of(name: str, numbers: dict[str, int]) -> int | None:
    label = cells.label_of(name, numbers)
    return int(label[4:-1]) if label else None


def _show_typed_text(shell: Any, name: str, number: int, *, cell_magic: bool) -> None:
    """The cell as the user typed it, for its lines in the report: IPython keeps the
    transformed text, where `%spyglass x` reads `get_ipython().run_line_magic(…)` and a
    `%%spyglass` cell is one line."""
    raw = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    cached = linecache.getlines(name)
    if not isinstance(raw, list) or not 0 <= number < len(raw) or not cached:
        return
    text = str(raw[number])
    lines = [line + "\n" for line in text.splitlines()]
    # The same cell: the magic on its first line, or each line where it was.
    same = text.startswith("%%spyglass") if cell_magic else len(lines) == len(cached)
    if same:
        linecache.cache[name] = (len(text), None, lines, name)


class _Compiled:
    def __init__(self, body: CodeType, last: CodeType | None) -> None:
        self.body = body
        self.last = last  # the value of the last expression, shown as the cell's result


def _compile(shell: Any, source: str, name: str, first_lineno: int) -> _Compiled:
    """`source` compiled as lines `first_lineno`… of `name`, its last expression apart."""
    tree = ast.parse(shell.transform_cell(source), filename=name)
    ast.increment_lineno(tree, first_lineno - 1)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    flags = getattr(shell.compile, "flags", 0)
    body = compile(tree, name, "exec", flags, dont_inherit=True)
    if last is None:
        return _Compiled(body, None)
    expr = ast.Expression(last.value)
    return _Compiled(body, compile(expr, name, "eval", flags, dont_inherit=True))


def _own_name(shell: Any, number: int, text: str) -> str:
    name = _OWN_NAME.format(number=number, serial=next(_serials))
    lines = [line + "\n" for line in text.splitlines()]
    linecache.cache[name] = (len(text), None, lines, name)
    known = getattr(getattr(shell, "compile", None), "_filename_map", None)
    if isinstance(known, dict):
        known[name] = number  # tracebacks name the cell too
    return name


def _options(shell: Any, ns: argparse.Namespace, name: str) -> ProfileOptions:
    paths = [os.getcwd(), *(os.path.abspath(d) for d in ns.program_path)]
    cell_dir = cells.cell_directory(shell)
    if cell_dir is not None:
        paths.append(cell_dir)
    return ProfileOptions(
        interval_s=ns.interval,
        memory=ns.memory,
        memory_window=ns.memory_window,
        gpu=ns.gpu,
        program_paths=paths,
        profile_all=ns.profile_all,
        pseudo_files=[*api.TYPED_CODE, name, "<spyglass-cell-*"],
    )


def run_magic(shell: Any, line: str, cell: str | None) -> Any:
    """Profiles the statement of `line` or the `cell`, shows the report, and returns the
    value of the code's last expression."""
    __tracebackhide__ = True  # an error in the user's code is shown without our frames
    ns, statement = parse_line(line)
    if cell is None and not statement:
        raise MagicUsageError("give a statement to profile: %spyglass [options] statement")
    if cell is not None and statement:
        raise MagicUsageError(
            f"%%spyglass takes options only, not {statement!r}: put the code in the cell below it"
        )
    if api.is_profiling():
        raise MagicUsageError("spyglass is already profiling this process (spyglass.start())")
    numbers = cells.cell_numbers(shell)
    number = int(getattr(shell, "execution_count", 0) or 0)
    caller = _calling_cell(shell, numbers)
    own: dict[str, str] = {}
    if caller is not None:
        name, lineno = caller
        number = _number_of(name, numbers) or number
        _show_typed_text(shell, name, number, cell_magic=cell is not None)
        first = lineno + 1 if cell is not None else lineno
    else:
        typed = f"%%spyglass {line}\n{cell}" if cell is not None else statement
        name = _own_name(shell, number, typed)
        own[name] = cells.cell_label(number)
        first = 2 if cell is not None else 1
    code = _compile(shell, cell if cell is not None else statement, name, first)
    magic = (
        f"%%spyglass cell {cells.cell_label(number)}"
        if cell is not None
        else f"%spyglass {statement}"
    )
    api.start_with_options(_options(shell, ns, name))
    try:
        exec(code.body, shell.user_ns)
        return eval(code.last, shell.user_ns) if code.last is not None else None
    finally:
        text = api.stop_to_json(program=magic, argv=[])
        try:
            _report(expanded(json.loads(text)), ns, numbers=cells.cell_numbers(shell), own=own)
        except Exception as e:  # the code's own error, if any, is the one to see
            print(f"spyglass: error: could not show the profile: {e}", file=sys.stderr)


def _report(
    profile: dict[str, Any], ns: argparse.Namespace, *, numbers: dict[str, int], own: dict[str, str]
) -> None:
    from spyglass.integrations.notebook_report import NotebookReport
    from spyglass.reporters import should_use_color

    cells.relabel_cells(profile, numbers, own)
    written = None
    from spyglass.runtime.output import profile_text

    if ns.outfile is not None and _write(ns.outfile, "the profile", profile_text(profile)):
        written = ns.outfile
    if ns.html is not None:
        _write(ns.html, "the HTML report", NotebookReport(profile, terminal=False).page())
    terminal = _is_terminal()
    report = NotebookReport(
        profile,
        terminal=terminal,
        color=terminal and should_use_color(sys.stdout),
        profile_path=written,
    )
    from IPython.display import display

    display(report)


def _write(path: str, what: str, text: str) -> bool:
    from spyglass.outfile import write_output

    try:
        write_output(path, text)
    except OSError as e:
        print(f"spyglass: error: cannot write {what} to {path!r}: {e.strerror}", file=sys.stderr)
        return False
    return True


def _is_terminal() -> bool:
    try:
        return bool(sys.stdout.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _magic(shell: Any) -> Any:
    def spyglass(line: str, cell: str | None = None) -> Any:
        from IPython.core.error import UsageError

        __tracebackhide__ = True
        try:
            return run_magic(shell, line, cell)
        except _HelpShown:
            print(USAGE)
            return None
        except MagicUsageError as e:
            raise UsageError(str(e)) from None

    return spyglass


def load_ipython_extension(shell: Any) -> None:
    """Registers %spyglass and %%spyglass (IPython calls this on `%load_ext spyglass`)."""
    shell.register_magic_function(_magic(shell), magic_kind="line_cell", magic_name="spyglass")
