"""Reporters turn a profile (or, for ``spyglass diff``, a comparison) into something to
read, chosen by name or by the name of the file to write.

Every reporter keeps one contract (spyglass.reporters.base.Reporter): it declares its name,
its files' extensions and whether it is binary; options go to its constructor; ``render``
returns the whole output and ``write`` writes it to a path or a stream.

Two registries hold them: ``FORMATS`` (a profile's formats, for ``spyglass run`` and
``view`` and the integrations; the module functions below act on it) and
``DIFF_FORMATS`` (a comparison's, for ``spyglass diff``). Each knows its built-in formats
from one table (name -> module, class, extensions) and imports a reporter's module on
first use only: importing this package imports none of them, nor the profile reader they
need, as it is on the way out of every profiled run. ``register`` adds a format of one's
own (a Reporter class, which the registry calls with the options), which then is
offered by ``spyglass view --format`` like the built-in ones.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs milliseconds, and `spyglass run` reads this module
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import IO, Any

    from spyglass.reporters.base import Reporter

    Factory = type[Reporter[Any]]

DEFAULT_REPORTER = "terminal"


class UnknownReporterError(LookupError):
    """No reporter is registered under the requested name."""


class Registry:
    """The formats of one kind of document: the built-in ones, by the module and class
    that define each and its files' extensions, and the ones registered since."""

    def __init__(self, what: str, builtin: Mapping[str, tuple[str, str, tuple[str, ...]]]):
        self.what = what  # how error messages name a format: "report format"
        self.builtin = builtin
        self._registered: dict[str, Factory] = {}

    def register(self, name: str, factory: Factory, *, replace: bool = False) -> Factory:
        """Register ``factory`` (a Reporter class) under ``name`` and return it. Raises
        ValueError when the name is taken (a built-in one too), unless ``replace``."""
        if not name or not name.replace("-", "").replace("_", "").isalnum():
            raise ValueError(f"invalid reporter name {name!r}")
        if not callable(getattr(factory, "render", None)):
            raise TypeError(f"reporter {name!r} has no render() method")
        if not isinstance(factory, type):
            raise TypeError(f"reporter {name!r} must be given as its class, not an instance")
        taken = name in self._registered or name in self.builtin
        if taken and not replace and self._registered.get(name) is not factory:
            raise ValueError(f"a reporter named {name!r} is already registered")
        self._registered[name] = factory
        return factory

    def unregister(self, name: str) -> None:
        """Forget the reporter registered under ``name`` (no error when there is none); a
        built-in format of that name is back."""
        self._registered.pop(name, None)

    def factory(self, name: str) -> Factory:
        """What makes the reporter named ``name``; UnknownReporterError lists the known
        names. A built-in one's module is imported here, the first time."""
        if name in self._registered:
            return self._registered[name]
        if name not in self.builtin:
            known = ", ".join(self.available())
            raise UnknownReporterError(f"unknown {self.what} {name!r} (available: {known})")
        module, cls, _ = self.builtin[name]
        import importlib  # here: `spyglass run` reads this module before its program starts

        made: Factory = getattr(importlib.import_module(module), cls)
        return made

    def create(self, name: str, **options: Any) -> Reporter[Any]:
        """A reporter of format ``name`` made with ``options``."""
        return self.factory(name)(**options)

    def available(self) -> list[str]:
        """Every format's name, sorted (without importing any reporter)."""
        return sorted(set(self._registered) | set(self.builtin))

    def extensions(self, name: str) -> tuple[str, ...]:
        """The file endings of format ``name``, its default first (a built-in one's without
        importing it)."""
        if name in self.builtin and name not in self._registered:
            return self.builtin[name][2]
        return tuple(self.factory(name).extensions)  # raises for an unknown name

    def format_for_path(self, path: str) -> str | None:
        """The format a file named ``path`` is written in, by the longest ending of its
        name that a format claims (``run.speedscope.json``: speedscope); None when none
        does, or when the name is only the ending."""
        name = os.path.basename(path).lower()
        best: tuple[int, str] | None = None
        for fmt in self.available():
            for ending in self.extensions(fmt):
                fits = name.endswith(ending) and len(name) > len(ending)
                if fits and (best is None or len(ending) > best[0]):
                    best = (len(ending), fmt)
        return best[1] if best else None


#: A profile's formats: name -> (module, class, file endings with the default first).
FORMATS = Registry(
    "report format",
    {
        "terminal": ("spyglass.reporters.terminal", "TerminalReporter", (".txt",)),
        "html": ("spyglass.reporters.html", "HtmlReporter", (".html", ".htm")),
        "speedscope": (
            "spyglass.reporters.speedscope",
            "SpeedscopeReporter",
            (".speedscope.json",),
        ),
        "collapsed": (
            "spyglass.reporters.collapsed",
            "CollapsedReporter",
            (".folded", ".collapsed"),
        ),
        "pstats": ("spyglass.reporters.pstats_format", "PstatsReporter", (".pstats", ".prof")),
        "json": ("spyglass.reporters.json_format", "JsonReporter", (".json",)),
    },
)

#: A comparison's formats (``spyglass diff``), the same way.
DIFF_FORMATS = Registry(
    "diff format",
    {
        "terminal": ("spyglass.reporters.diff_terminal", "DiffTerminalReporter", (".txt",)),
        "json": ("spyglass.reporters.diff_json", "DiffJsonReporter", (".json",)),
        "html": ("spyglass.reporters.diff_html", "DiffHtmlReporter", (".html", ".htm")),
    },
)


def register(name: str, factory: Factory, *, replace: bool = False) -> Factory:
    """Register a profile format of one's own: FORMATS.register."""
    return FORMATS.register(name, factory, replace=replace)


def unregister(name: str) -> None:
    """FORMATS.unregister."""
    FORMATS.unregister(name)


def get_reporter(name: str, **options: Any) -> Reporter[Any]:
    """A reporter of the profile format ``name`` made with ``options``; UnknownReporterError
    lists the known formats."""
    return FORMATS.create(name, **options)


def available() -> list[str]:
    """The profile formats' names, sorted (without importing any reporter)."""
    return FORMATS.available()


def format_for_path(path: str) -> str | None:
    """The profile format a file named ``path`` is written in, by its ending; None when
    unknown."""
    return FORMATS.format_for_path(path)


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
    profile: Mapping[str, Any], out: IO[Any], *, format: str = DEFAULT_REPORTER, **options: Any
) -> None:
    """Write the report of ``profile`` in format ``format``, made with ``options``, to the
    stream ``out`` (the terminal report decides colour and width from ``out`` unless the
    options say)."""
    get_reporter(format, **options).write(profile, out)


__all__ = [
    "DEFAULT_REPORTER",
    "DIFF_FORMATS",
    "FORMATS",
    "Registry",
    "UnknownReporterError",
    "available",
    "format_for_path",
    "get_reporter",
    "register",
    "render_report",
    "should_use_color",
    "unregister",
]
