"""The registry of reporters and the render_report entry point."""

from __future__ import annotations

import io
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


def test_terminal_is_built_in() -> None:
    assert "terminal" in available()
    assert isinstance(get_reporter("terminal"), TerminalReporter)
    assert get_reporter("terminal") is get_reporter("terminal")


def test_unknown_reporter_lists_the_known_ones() -> None:
    with pytest.raises(UnknownReporterError) as info:
        get_reporter("html5")
    assert str(info.value) == "unknown report format 'html5' (available: terminal)"
    assert isinstance(info.value, LookupError)


def test_register_and_use(recorder: Recorder, simple: dict[str, Any]) -> None:
    assert available() == ["recorder", "terminal"]
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
