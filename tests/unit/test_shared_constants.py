"""Defaults and bounds that the C++ core defines and the extension exports: the command
line, the API, the schema and the profile reader take them from there, so none of them can
drift from what the collector does."""

from __future__ import annotations

import argparse
import inspect
from typing import Any

import pytest

from spyglass import _native, api, schema
from spyglass.cli._args import byte_size, size_text
from spyglass.cli.run import build_parser
from spyglass.profile_model import memory_figures as memory


def _interval_of(argv: list[str]) -> Any:
    return build_parser().parse_args([*argv, "app.py"]).interval


def test_the_command_line_samples_at_the_collectors_default_interval() -> None:
    assert _interval_of([]) == _native.DEFAULT_INTERVAL_S
    assert f"{_native.DEFAULT_INTERVAL_S:g}" in build_parser().format_help()


def test_the_api_samples_at_the_collectors_default_interval() -> None:
    default = inspect.signature(api.start).parameters["interval"].default
    assert default == _native.DEFAULT_INTERVAL_S


@pytest.mark.parametrize("bound", [_native.MIN_INTERVAL_S, _native.MAX_INTERVAL_S])
def test_the_command_line_takes_the_interval_bounds(bound: float) -> None:
    assert _interval_of(["--interval", repr(bound)]) == bound


@pytest.mark.parametrize("outside", [_native.MIN_INTERVAL_S * 0.99, _native.MAX_INTERVAL_S * 1.01])
def test_the_command_line_refuses_intervals_the_collector_refuses(
    outside: float, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        _interval_of(["--interval", repr(outside)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"{_native.MIN_INTERVAL_S:g}" in err and f"{_native.MAX_INTERVAL_S:g}" in err
    with pytest.raises(ValueError, match="interval"):
        _native.Profiler().start(interval_s=outside, call_opcodes=[])


def test_memory_window_bounds_are_the_collectors() -> None:
    low, high = _native.MIN_MEMORY_WINDOW, _native.MAX_MEMORY_WINDOW
    assert byte_size(size_text(low)) == low
    assert byte_size(size_text(high)) == high
    assert byte_size(size_text(_native.DEFAULT_MEMORY_WINDOW)) == _native.DEFAULT_MEMORY_WINDOW
    for outside in (low - 1, high + 1):
        with pytest.raises(argparse.ArgumentTypeError, match=size_text(low)):
            byte_size(str(outside))
        with pytest.raises(ValueError, match="memory window"):
            _native.Profiler().start(
                interval_s=_native.DEFAULT_INTERVAL_S,
                call_opcodes=[],
                memory=True,
                memory_window=outside,
            )


def test_size_text_reads_back() -> None:
    assert size_text(4096) == "4K"
    assert size_text(1 << 40) == "1024G"
    assert size_text(3 << 20) == "3M"
    assert size_text(1000) == "1000"
    for n in (4096, 5000, 65536, 3 << 20, 1 << 40):
        assert byte_size(size_text(n)) == n


def test_timeline_caps_are_the_writers() -> None:
    assert memory.FOOTPRINT_POINTS == _native.RUN_TIMELINE_POINTS
    assert memory.LINE_POINTS == _native.LINE_TIMELINE_POINTS
    doc = schema.load_schema()
    assert doc["properties"]["footprint_timeline"]["maxItems"] == _native.RUN_TIMELINE_POINTS
    caps = {
        d["properties"]["mem_timeline"]["maxItems"]
        for d in doc["$defs"].values()
        if isinstance(d, dict) and "mem_timeline" in d.get("properties", {})
    }
    assert caps == {_native.LINE_TIMELINE_POINTS}


def test_the_mirror_the_command_line_reads_before_loading_the_extension_is_exact() -> None:
    # `spyglass run` starts the program before it loads the extension, from these copies.
    from spyglass import _constants

    names = [n for n in vars(_constants) if n.isupper()]
    assert len(names) >= 8, names
    for name in names:
        assert getattr(_constants, name) == getattr(_native, name), name


def test_the_package_version_is_the_builds() -> None:
    import spyglass

    assert spyglass.__version__ == _native.VERSION
