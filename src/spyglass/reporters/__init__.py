"""Reporters turn a profile dict into something to read, by name.

A reporter is any object with a ``render`` method::

    render(profile, out, *, color, width, profile_path=None) -> None

It may also have ``write(profile, path)`` to write a file itself, and ``binary = True``
when its output is bytes rather than text (see ``spyglass view``); the built-in ones say
the ``extension`` of their files, and options are given to their constructors.

``format_for_path`` picks a format by the name of the file to write (``report.html``,
``run.speedscope.json``), from ``_EXTENSIONS``, without importing any reporter.

The built-in formats are listed in ``_BUILTIN``, the one table of them: each name maps to
the module that defines and registers its reporter. Those modules are imported on first
use (get_reporter), never by importing this package or by available(), so importing this
package stays cheap: it is on the way out of every profiled run.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any, Protocol, TextIO

if TYPE_CHECKING:  # profile_io costs milliseconds to import; the reporter modules need it
    from spyglass.profile_model.io import Profile

# Built-in reporters: name -> module that registers it when imported.
_BUILTIN: Mapping[str, str] = {
    "terminal": "spyglass.reporters.terminal",
    "html": "spyglass.reporters.html",
    "speedscope": "spyglass.reporters.speedscope",
    "collapsed": "spyglass.reporters.collapsed",
    "pstats": "spyglass.reporters.pstats_format",
    "json": "spyglass.reporters.json_format",
}

DEFAULT_REPORTER = "terminal"

# File name endings -> built-in format; the longest ending that matches wins.
_EXTENSIONS: Mapping[str, str] = {
    ".html": "html",
    ".htm": "html",
    ".speedscope.json": "speedscope",
    ".folded": "collapsed",
    ".collapsed": "collapsed",
    ".pstats": "pstats",
    ".prof": "pstats",
    ".txt": "terminal",
    ".json": "json",
}


def format_for_path(path: str) -> str | None:
    """The format a file named ``path`` is written in, by its ending; None when unknown."""
    name = os.path.basename(path).lower()
    endings = [e for e in _EXTENSIONS if name.endswith(e) and len(name) > len(e)]
    return _EXTENSIONS[max(endings, key=len)] if endings else None


class Reporter(Protocol):
    def render(
        self,
        profile: Profile,
        out: TextIO,
        *,
        color: bool,
        width: int | None,
        profile_path: str | None = None,
    ) -> None: ...


class UnknownReporterError(LookupError):
    """No reporter is registered under the requested name."""


_registry: dict[str, Reporter] = {}
# The reporter each built-in module registered for its own name, to bring back after an
# unregister() (the module is imported once; importing it again registers nothing).
_builtin_reporters: dict[str, Reporter] = {}


def register(name: str, reporter: Reporter, *, replace: bool = False) -> Reporter:
    """Register ``reporter`` under ``name`` and return it.

    Raises ValueError when the name is taken, unless ``replace`` is true.
    """
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"invalid reporter name {name!r}")
    if not callable(getattr(reporter, "render", None)):
        raise TypeError(f"reporter {name!r} has no render() method")
    if name in _registry and not replace and _registry[name] is not reporter:
        raise ValueError(f"a reporter named {name!r} is already registered")
    _registry[name] = reporter
    if _BUILTIN.get(name) == type(reporter).__module__:
        _builtin_reporters.setdefault(name, reporter)
    return reporter


def unregister(name: str) -> None:
    """Forget the reporter registered under ``name`` (no error when there is none).

    A built-in name stays available: its own reporter comes back on next use.
    """
    _registry.pop(name, None)


def _load_builtin(name: str) -> None:
    module_name = _BUILTIN.get(name)
    if module_name is None or name in _registry:
        return
    module = importlib.import_module(module_name)  # registers the reporter the first time
    if name not in _registry:  # imported before, then unregistered
        reporter = _builtin_reporters.get(name, getattr(module, "REPORTER", None))
        if reporter is not None:
            register(name, reporter)


def get_reporter(name: str) -> Reporter:
    """The reporter registered under ``name``; UnknownReporterError lists the known ones."""
    _load_builtin(name)
    try:
        return _registry[name]
    except KeyError:
        names = ", ".join(available())
        raise UnknownReporterError(f"unknown report format {name!r} (available: {names})") from None


def available() -> list[str]:
    """Names of all reporters, sorted: the built-in ones (without importing them) and the
    registered ones."""
    return sorted(set(_registry) | set(_BUILTIN))


def should_use_color(stream: IO[Any]) -> bool:
    """Whether to colour output written to ``stream``: a terminal, unless NO_COLOR is set
    or TERM is "dumb"; FORCE_COLOR (non-empty) forces colour even into a pipe."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (OSError, ValueError):
        return False


def render_report(
    profile: Profile,
    out: TextIO,
    *,
    format: str = DEFAULT_REPORTER,
    color: bool | None = None,
    width: int | None = None,
    profile_path: str | None = None,
) -> None:
    """Render ``profile`` with the reporter named ``format`` to ``out``.

    ``color=None`` decides from ``out`` (see should_use_color); ``width=None`` lets the
    reporter use the terminal's width (80 columns when there is no terminal).
    """
    reporter = get_reporter(format)
    use_color = should_use_color(out) if color is None else color
    reporter.render(profile, out, color=use_color, width=width, profile_path=profile_path)


__all__ = [
    "DEFAULT_REPORTER",
    "Reporter",
    "UnknownReporterError",
    "available",
    "format_for_path",
    "get_reporter",
    "register",
    "render_report",
    "should_use_color",
    "unregister",
]
