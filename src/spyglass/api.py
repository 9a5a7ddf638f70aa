"""Profiling from inside a program: start()/stop(), `with profile():`, `@profile`."""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, overload

from spyglass._native import DEFAULT_INTERVAL_S
from spyglass.profile_model.compact import expanded
from spyglass.profile_result import Profile
from spyglass.runtime.code_scope import narrow_to
from spyglass.runtime.options import ProfileOptions
from spyglass.runtime.session import Session

F = TypeVar("F", bound=Callable[..., Any])

_session: Session | None = None


class ProfilerStateError(RuntimeError):
    """start() while profiling, or stop() while not."""


def _caller_dir(depth: int) -> str:
    filename = sys._getframe(depth + 1).f_code.co_filename
    if filename.startswith("<"):
        return os.getcwd()
    return str(Path(filename).resolve().parent)


# Code typed rather than saved in a file: the REPL ("<stdin>", "<stdin>-N" from 3.13, whose
# new REPL on a terminal says "<python-input-N>"), IPython cells, code.interact(), `-c` and
# exec'd strings. "*": each statement or cell is named as it runs.
TYPED_CODE = ["<string>", "<stdin>*", "<python-input-*", "<ipython-input-*", "<console>"]


def _typed_code(depth: int) -> list[str]:
    """The names of typed-in code, the caller's own included (whatever tool it typed in)."""
    filename = sys._getframe(depth + 1).f_code.co_filename
    own = [filename] if filename.startswith("<") and not filename.startswith("<frozen") else []
    return TYPED_CODE + [f for f in own if not any(_matches(f, p) for p in TYPED_CODE)]


def _matches(filename: str, pattern: str) -> bool:
    return filename.startswith(pattern[:-1]) if pattern.endswith("*") else filename == pattern


def start(
    *,
    interval: float = DEFAULT_INTERVAL_S,
    program_path: str | list[str] | None = None,
    profile_all: bool = False,
    profile_only: list[str] | None = None,
    profile_exclude: list[str] | None = None,
    memory: bool = True,
    memory_window: int | None = None,
    gpu: bool = True,
) -> None:
    """Starts profiling every thread of this process: CPU time and, unless `memory` is
    false, allocations, footprint and copies (`memory_window`: the sampling rate, mean bytes
    allocated between two memory samples, 64 KiB by default); unless `gpu` is false, GPU
    utilisation and memory too where NVIDIA's NVML library loads.

    The user's code defaults to the directory of the file calling start(). Raises
    ProfilerStateError when this process is profiled already: by an earlier start(), or by
    `pytest --spyglass`, which profiles each test itself."""
    paths = [program_path] if isinstance(program_path, str) else list(program_path or [])
    options = ProfileOptions(
        interval_s=interval,
        program_paths=[str(Path(p).resolve()) for p in paths] or [_caller_dir(1)],
        profile_all=profile_all,
        profile_only=list(profile_only or []),
        profile_exclude=list(profile_exclude or []),
        pseudo_files=_typed_code(1) if not paths else [],
        memory=memory,
        gpu=gpu,
    )
    if memory_window is not None:
        options.memory_window = int(memory_window)
    start_with_options(options)


def start_with_options(options: ProfileOptions) -> None:
    """start() with options made by the caller (the IPython magic and the pytest plugin
    decide for themselves what the user's code is)."""
    global _session
    if _session is not None and _session.running:
        raise ProfilerStateError("spyglass is already profiling this process")
    session = Session(options)
    try:
        session.start()
    except RuntimeError as e:
        if "already running" not in str(e):
            raise
        # Profiled by `spyglass run` (or the process's own profiler started otherwise): the
        # same situation as a second start(), so the same error.
        raise ProfilerStateError(
            "spyglass is already profiling this process (`spyglass run` profiles all of it; "
            "@spyglass.profile narrows its report to a function)"
        ) from None
    _session = session
    atexit.register(_stop_at_exit)


def _stop_at_exit() -> None:
    if _session is not None and _session.running:
        _session.stop()


def stop(outfile: str | os.PathLike[str] | None = None) -> Profile:
    """Stops profiling and returns the profile (the JSON document as a dict, shown in one
    line in a REPL; `.report()` prints the report); writes it to `outfile` as well when one
    is given."""
    text = stop_to_json(program=_program_name(), argv=list(sys.argv))
    if outfile is not None:
        from spyglass.runtime.output import write_text_atomically

        write_text_atomically(Path(outfile), text)
    return Profile(expanded(json.loads(text)))


def _program_name() -> str:
    """What the report names as the program: the script, or, where Python reads its program
    from a terminal or a pipe (sys.argv[0] is then empty), that."""
    name = sys.argv[0] if sys.argv else ""
    if name:
        return name
    return "<interactive>" if hasattr(sys, "ps1") or sys.flags.interactive else "<stdin>"


def is_profiling() -> bool:
    return _session is not None and _session.running


def stop_to_json(*, program: str, argv: list[str]) -> str:
    """Stops profiling and returns the profile as JSON text, `program` and `argv` naming
    what was profiled."""
    global _session
    session = _session
    if session is None or not session.running:
        raise ProfilerStateError("spyglass is not profiling: call spyglass.start() first")
    session.stop()
    _session = None
    return session.profile_json(program=program, argv=argv, exit_status=None)


class _ProfileBlock:
    """`with spyglass.profile(...) as p:` profiles the block; p.result holds the profile."""

    def __init__(self, outfile: str | os.PathLike[str] | None, kwargs: dict[str, Any]) -> None:
        self.outfile = outfile
        self.kwargs = kwargs
        self.result: Profile | None = None

    def __enter__(self) -> _ProfileBlock:
        kwargs = dict(self.kwargs)
        kwargs.setdefault("program_path", _caller_dir(1))
        start(**kwargs)
        return self

    def __exit__(
        self,
        etype: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.result = stop(self.outfile)


@overload
def profile(func: F) -> F: ...
@overload
def profile(
    func: None = None, *, outfile: str | os.PathLike[str] | None = None, **kwargs: Any
) -> _ProfileBlock: ...
def profile(
    func: Any = None, *, outfile: str | os.PathLike[str] | None = None, **kwargs: Any
) -> Any:
    """As a decorator, `@spyglass.profile` narrows the report to the decorated functions
    (lines they run, and the lines of theirs that call elsewhere). As `with
    spyglass.profile():`, it profiles the block."""
    if func is None:
        return _ProfileBlock(outfile, kwargs)
    code = getattr(func, "__code__", None)
    if code is None:
        raise TypeError("@spyglass.profile decorates functions")
    narrow_to(code.co_filename, code.co_firstlineno)

    @functools.wraps(func)
    def wrapper(*args: Any, **kw: Any) -> Any:
        return func(*args, **kw)

    return wrapper
