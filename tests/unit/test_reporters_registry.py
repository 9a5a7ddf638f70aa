"""The registry of reporters and the render_report entry point."""

from __future__ import annotations

import importlib
import io
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from spyglass import reporters
from spyglass.reporters import (
    DIFF_FORMATS,
    FORMATS,
    UnknownReporterError,
    available,
    format_for_path,
    get_reporter,
    register,
    render_report,
    should_use_color,
    unregister,
)
from spyglass.reporters.base import Reporter
from spyglass.reporters.terminal import TerminalReporter

BUILT_IN = ["collapsed", "html", "json", "pstats", "speedscope", "terminal"]
# The module of each built-in format: the table in spyglass.reporters says the same.
MODULES = {
    "collapsed": "spyglass.reporters.collapsed",
    "html": "spyglass.reporters.html",
    "json": "spyglass.reporters.json_format",
    "pstats": "spyglass.reporters.pstats_format",
    "speedscope": "spyglass.reporters.speedscope",
    "terminal": "spyglass.reporters.terminal",
}


class Recorder(Reporter[Any]):
    """A reporter of one's own: says what it was made with and the program's name."""

    name = "recorder"
    extensions = (".rec",)
    made: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, *, color: bool | None = None, width: int | None = None) -> None:
        self.made.append({"color": color, "width": width})

    def render(self, doc: Any) -> str:
        return f"{doc['program']}\n"


@pytest.fixture
def recorder() -> Iterator[type[Recorder]]:
    Recorder.made.clear()
    register("recorder", Recorder)
    yield Recorder
    unregister("recorder")


def test_built_in_formats() -> None:
    assert available() == BUILT_IN
    assert {name: entry[0] for name, entry in FORMATS.builtin.items()} == MODULES
    assert isinstance(get_reporter("terminal"), TerminalReporter)
    for name in BUILT_IN:
        reporter = get_reporter(name)
        assert isinstance(reporter, Reporter) and reporter.name == name
        module = importlib.import_module(MODULES[name])
        assert type(reporter) is getattr(module, FORMATS.builtin[name][1])
        # The table says each one's extensions without importing it: the class agrees.
        assert reporter.extensions == FORMATS.extensions(name) and reporter.extensions
        assert reporter.binary is (name == "pstats")
        assert reporter.exact is (name not in ("terminal", "collapsed"))


def test_diff_formats() -> None:
    assert DIFF_FORMATS.available() == ["html", "json", "terminal"]
    for name in DIFF_FORMATS.available():
        reporter = DIFF_FORMATS.create(name)
        assert reporter.name == name and reporter.extensions == DIFF_FORMATS.extensions(name)
        assert not reporter.binary
    assert DIFF_FORMATS.format_for_path("d.htm") == "html"
    with pytest.raises(UnknownReporterError, match="unknown diff format 'pstats'"):
        DIFF_FORMATS.create("pstats")


def test_options_go_to_the_constructor(simple: dict[str, Any]) -> None:
    narrow = get_reporter("terminal", width=40, color=False).render(simple)
    wide = get_reporter("terminal", width=200, color=False).render(simple)
    assert isinstance(narrow, str) and narrow != wide
    assert max(len(line) for line in narrow.splitlines()) <= 40
    with pytest.raises(TypeError):
        get_reporter("json", width=40)  # an option the format does not take


def test_write_to_a_path_or_a_stream(simple: dict[str, Any], tmp_path: Any) -> None:
    for name in BUILT_IN:
        reporter = get_reporter(name)
        target = tmp_path / f"out{reporter.extensions[0]}"
        reporter.write(simple, target)
        data = reporter.render(simple)
        assert target.read_bytes() == (data if isinstance(data, bytes) else data.encode())
    raw = io.BytesIO()
    get_reporter("pstats").write(simple, raw)  # bytes to a binary stream
    assert raw.getvalue() == get_reporter("pstats").render(simple)
    with pytest.raises(TypeError, match="binary"):
        get_reporter("pstats").write(simple, io.StringIO())


def test_importing_the_package_imports_no_reporter() -> None:
    # Importing spyglass.reporters is on the way out of every profiled run: listing the
    # formats must not import any of them, nor the profile reader they need.
    code = (
        "import sys, spyglass.reporters as r\n"
        "names = r.available()\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('spyglass.reporters.'))\n"
        "print(','.join(names), loaded, 'spyglass.profile_model.io' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == f"{','.join(BUILT_IN)} [] False\n"


def test_unknown_reporter_lists_the_known_ones() -> None:
    with pytest.raises(UnknownReporterError) as info:
        get_reporter("html5")
    assert str(info.value) == (
        "unknown report format 'html5' "
        "(available: collapsed, html, json, pstats, speedscope, terminal)"
    )
    assert isinstance(info.value, LookupError)


def test_register_and_use(recorder: type[Recorder], simple: dict[str, Any]) -> None:
    assert available() == sorted([*BUILT_IN, "recorder"])
    assert format_for_path("run.rec") == "recorder"
    out = io.StringIO()
    render_report(simple, out, format="recorder", color=True, width=99)
    assert out.getvalue() == "simple.py\n"
    assert recorder.made == [{"color": True, "width": 99}]


def test_duplicate_names_are_refused_unless_replacing(recorder: type[Recorder]) -> None:
    class Other(Recorder):
        pass

    with pytest.raises(ValueError, match="already registered"):
        register("recorder", Other)
    register("recorder", recorder)  # the same class again is fine
    assert register("recorder", Other, replace=True) is Other
    assert isinstance(get_reporter("recorder"), Other)


@pytest.mark.parametrize("name", ["", "with space", "a/b"])
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="invalid reporter name"):
        register(name, Recorder)


def test_objects_without_render_are_refused() -> None:
    with pytest.raises(TypeError, match="has no render"):
        register("broken", object)
    with pytest.raises(TypeError, match="as its class"):
        register("broken", Recorder())  # type: ignore[arg-type]
    assert "broken" not in available()


def test_unregister() -> None:
    register("temp", Recorder)
    unregister("temp")
    unregister("temp")
    assert "temp" not in available()


@pytest.mark.parametrize("name", ["terminal", "json"])
def test_a_built_in_comes_back_after_unregister(name: str) -> None:
    original = type(get_reporter(name))
    unregister(name)
    assert name in available()
    assert type(get_reporter(name)) is original


def test_a_built_in_can_be_replaced_and_restored(simple: dict[str, Any]) -> None:
    original = type(get_reporter("json"))
    with pytest.raises(ValueError, match="already registered"):
        register("json", Recorder)
    Recorder.made.clear()
    try:
        register("json", Recorder, replace=True)
        out = io.StringIO()
        render_report(simple, out, format="json")
        assert out.getvalue() == "simple.py\n" and len(Recorder.made) == 1
    finally:
        unregister("json")
    assert type(get_reporter("json")) is original
    assert available() == BUILT_IN


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_should_use_color(clean_env: pytest.MonkeyPatch) -> None:
    assert should_use_color(_Stream(True))
    assert not should_use_color(_Stream(False))
    assert not should_use_color(object())  # type: ignore[arg-type]
    clean_env.setenv("TERM", "dumb")
    assert not should_use_color(_Stream(True))
    clean_env.setenv("FORCE_COLOR", "1")
    assert should_use_color(_Stream(False))
    clean_env.setenv("NO_COLOR", "1")
    assert not should_use_color(_Stream(True))


def test_render_report_decides_color_from_the_stream(
    simple: dict[str, Any], clean_env: pytest.MonkeyPatch
) -> None:
    def colored(out: _Stream, **options: Any) -> bool:
        render_report(simple, out, width=80, **options)
        return "\x1b[" in out.getvalue()

    assert colored(_Stream(True))
    assert not colored(_Stream(False))
    assert not colored(_Stream(True), color=False)


def test_default_format_is_terminal(simple: dict[str, Any]) -> None:
    out = io.StringIO()
    render_report(simple, out, color=False, width=80)
    assert out.getvalue().startswith("spyglass · simple.py\n")
    assert reporters.DEFAULT_REPORTER == "terminal"
