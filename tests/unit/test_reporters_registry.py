"""The registry of reporters and the render_report entry point."""

from __future__ import annotations

import importlib
import io
import subprocess
import sys
from collections.abc import Iterator
from typing import Any, TextIO

import pytest

from spyglass import reporters
from spyglass.reporters import (
    UnknownReporterError,
    available,
    get_reporter,
    register,
    render_report,
    should_use_color,
    unregister,
)
from spyglass.reporters.terminal import TerminalReporter

BUILT_IN = ["collapsed", "html", "json", "pstats", "speedscope", "terminal"]
# The module of each built-in format: the one table in spyglass.reporters says the same.
MODULES = {
    "collapsed": "spyglass.reporters.collapsed",
    "html": "spyglass.reporters.html",
    "json": "spyglass.reporters.json_format",
    "pstats": "spyglass.reporters.pstats_format",
    "speedscope": "spyglass.reporters.speedscope",
    "terminal": "spyglass.reporters.terminal",
}


class Recorder:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def render(
        self,
        profile: dict[str, Any],
        out: TextIO,
        *,
        color: bool,
        width: int | None,
        profile_path: str | None = None,
    ) -> None:
        self.calls.append({"color": color, "width": width, "profile_path": profile_path})
        out.write(f"{profile['program']}\n")


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    register("recorder", rec)
    yield rec
    unregister("recorder")


def test_built_in_formats() -> None:
    assert available() == BUILT_IN
    assert dict(reporters._BUILTIN) == MODULES
    assert isinstance(get_reporter("terminal"), TerminalReporter)
    assert get_reporter("terminal") is get_reporter("terminal")
    for name in BUILT_IN:
        reporter = get_reporter(name)
        assert callable(reporter.render)
        module = importlib.import_module(MODULES[name])
        assert getattr(module, "REPORTER", reporter) is reporter
        assert getattr(reporter, "binary", False) is (name == "pstats")


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


def test_register_and_use(recorder: Recorder, simple: dict[str, Any]) -> None:
    assert available() == sorted([*BUILT_IN, "recorder"])
    out = io.StringIO()
    render_report(simple, out, format="recorder", color=True, width=99, profile_path="p.json")
    assert out.getvalue() == "simple.py\n"
    assert recorder.calls == [{"color": True, "width": 99, "profile_path": "p.json"}]


def test_duplicate_names_are_refused_unless_replacing(recorder: Recorder) -> None:
    with pytest.raises(ValueError, match="already registered"):
        register("recorder", Recorder())
    register("recorder", recorder)  # the same object again is fine
    other = Recorder()
    assert register("recorder", other, replace=True) is other
    assert get_reporter("recorder") is other


@pytest.mark.parametrize("name", ["", "with space", "a/b"])
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="invalid reporter name"):
        register(name, Recorder())


def test_objects_without_render_are_refused() -> None:
    with pytest.raises(TypeError, match="has no render"):
        register("broken", object())  # type: ignore[arg-type]
    assert "broken" not in available()


def test_unregister() -> None:
    register("temp", Recorder())
    unregister("temp")
    unregister("temp")
    assert "temp" not in available()


@pytest.mark.parametrize("name", ["terminal", "json"])  # without and with a REPORTER
def test_a_built_in_comes_back_after_unregister(name: str) -> None:
    original = get_reporter(name)
    unregister(name)
    assert name in available()
    assert get_reporter(name) is original


def test_a_built_in_can_be_replaced_and_restored(simple: dict[str, Any]) -> None:
    original = get_reporter("json")
    with pytest.raises(ValueError, match="already registered"):
        register("json", Recorder())
    mine = Recorder()
    try:
        register("json", mine, replace=True)
        out = io.StringIO()
        render_report(simple, out, format="json")
        assert out.getvalue() == "simple.py\n" and len(mine.calls) == 1
    finally:
        unregister("json")
    assert get_reporter("json") is original
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
    recorder: Recorder, simple: dict[str, Any], clean_env: pytest.MonkeyPatch
) -> None:
    render_report(simple, _Stream(True), format="recorder")
    render_report(simple, _Stream(False), format="recorder")
    render_report(simple, _Stream(True), format="recorder", color=False)
    assert [c["color"] for c in recorder.calls] == [True, False, False]


def test_default_format_is_terminal(simple: dict[str, Any]) -> None:
    out = io.StringIO()
    render_report(simple, out, color=False, width=80)
    assert out.getvalue().startswith("spyglass · simple.py\n")
    assert reporters.DEFAULT_REPORTER == "terminal"
