"""The interchange formats (speedscope, collapsed, pstats, json) and `spyglass view` writing
them, and the html format from `spyglass view`."""

from __future__ import annotations

import copy
import importlib
import io
import json
import pstats
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from helpers import assert_valid_profile
from spyglass import reporters
from spyglass.cli import view
from spyglass.profile_model import queries as proc
from spyglass.profile_model import stack_weights
from spyglass.reporters.base import Reporter
from spyglass.reporters.page_data import unpack

Capture = pytest.CaptureFixture[str]
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FORMATS = ("speedscope", "collapsed", "pstats", "json")


def _module(name: str) -> Any:
    return importlib.import_module(f"spyglass.reporters.{name}")


def to_speedscope(profile: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = _module("speedscope").to_speedscope(profile)
    return result


def collapsed_lines(profile: dict[str, Any], weight: str = "cpu") -> list[str]:
    lines: list[str] = _module("collapsed").collapsed_lines(profile, weight)
    return lines


def to_stats(profile: dict[str, Any]) -> dict[Any, Any]:
    stats: dict[Any, Any] = _module("pstats_format").to_stats(profile)
    return stats


def _total_cpu_us(profile: dict[str, Any]) -> int:
    return round(proc.total_cpu(profile) * 1e6)


# The shape of speedscope's published schema (file-format-schema.json, generated from
# src/lib/file-format-spec.ts), for the sampled profiles spyglass writes.
SPEEDSCOPE_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": ["$schema", "shared", "profiles"],
    "properties": {
        "$schema": {"const": "https://www.speedscope.app/file-format-schema.json"},
        "name": {"type": "string"},
        "exporter": {"type": "string"},
        "activeProfileIndex": {"type": "number"},
        "shared": {
            "type": "object",
            "required": ["frames"],
            "properties": {
                "frames": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "file": {"type": "string"},
                            "line": {"type": "number"},
                            "col": {"type": "number"},
                        },
                        "additionalProperties": False,
                    },
                }
            },
        },
        "profiles": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "type", "name", "unit", "startValue", "endValue", "samples", "weights",
                ],
                "properties": {
                    "type": {"const": "sampled"},
                    "name": {"type": "string"},
                    "unit": {
                        "enum": [
                            "none", "nanoseconds", "microseconds", "milliseconds", "seconds",
                            "bytes",
                        ]
                    },
                    "startValue": {"type": "number"},
                    "endValue": {"type": "number"},
                    "samples": {
                        "type": "array",
                        "items": {"type": "array", "items": {"type": "number"}},
                    },
                    "weights": {"type": "array", "items": {"type": "number"}},
                },
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}  # fmt: skip


# --------------------------------------------------------------------------- speedscope


@pytest.mark.parametrize("fixture", ["simple", "multifile"])
def test_speedscope_structure(fixture: str, request: pytest.FixtureRequest) -> None:
    profile = request.getfixturevalue(fixture)
    doc = json.loads(json.dumps(to_speedscope(profile)))
    jsonschema.validate(doc, SPEEDSCOPE_SHAPE)
    assert doc["$schema"] == _module("speedscope").SCHEMA_URL
    frames = doc["shared"]["frames"]
    assert [p["name"] for p in doc["profiles"]] == ["CPU", "wait (off-CPU)"]
    cpu, wait = doc["profiles"]
    for prof in doc["profiles"]:
        assert prof["unit"] == "seconds" and prof["startValue"] == 0
        assert len(prof["samples"]) == len(prof["weights"])
        assert all(0 <= i < len(frames) for s in prof["samples"] for i in s)
        assert prof["endValue"] == pytest.approx(sum(prof["weights"]))
        assert all(w > 0 for w in prof["weights"])
    assert cpu["endValue"] == pytest.approx(proc.total_cpu(profile))
    assert wait["endValue"] == pytest.approx(profile["wait_s"])
    # stacks are outermost first, and frames keep function, file and line
    busy = [s for s in profile["stacks"] if proc.cpu_s(s) > 0]
    first = profile["frames"][busy[0]["frames"][0]]
    assert frames[cpu["samples"][0][0]] == {
        "name": first["function"],
        "file": first["file"],
        "line": first["lineno"],
    }
    assert {"name": stack_weights.NO_STACK} in frames  # the CPU no stack accounts for


def test_speedscope_without_wait_has_one_profile(simple: dict[str, Any]) -> None:
    for item in [simple, *simple["threads"], *simple["stacks"]]:
        item["wait_s"] = 0.0
    assert [p["name"] for p in to_speedscope(simple)["profiles"]] == ["CPU"]


# --------------------------------------------------------------------------- collapsed

FRAME = re.compile(r".+ \(.+:-?\d+\)")


@pytest.mark.parametrize("fixture", ["simple", "multifile"])
def test_collapsed_lines_parse_and_add_up(fixture: str, request: pytest.FixtureRequest) -> None:
    profile = request.getfixturevalue(fixture)
    lines = collapsed_lines(profile)
    total = 0
    for line in lines:
        stack, _, count = line.rpartition(" ")
        assert count.isdigit() and int(count) > 0, line
        total += int(count)
        frames = stack.split(";")
        assert all(FRAME.fullmatch(f) or f == stack_weights.NO_STACK for f in frames), line
    assert total == _total_cpu_us(profile)
    assert lines[-1] != lines[0]  # heaviest first
    if fixture == "simple":
        assert lines[0].endswith(";checksum (/home/ada/demo/simple.py:8) 1080000")


def test_collapsed_weights(simple: dict[str, Any]) -> None:
    def total(weight: str) -> int:
        return sum(int(line.rsplit(" ", 1)[1]) for line in collapsed_lines(simple, weight))

    assert total("samples") == simple["samples"]
    assert total("wait") == round(simple["wait_s"] * 1e6)
    with pytest.raises(ValueError, match="weight must be one of"):
        _module("collapsed").CollapsedReporter(weight="bytes")


def test_collapsed_replaces_semicolons(simple: dict[str, Any]) -> None:
    simple["frames"][3]["function"] = "odd;name\nhere"
    text = "\n".join(collapsed_lines(simple))
    assert "odd,name here (/home/ada/demo/simple.py:8)" in text
    assert all(len(line.rsplit(" ", 1)[0].split(";")) <= 4 for line in text.splitlines())


# --------------------------------------------------------------------------- pstats


def _load_stats(profile: dict[str, Any], tmp_path: Path) -> pstats.Stats:
    path = tmp_path / "out.pstats"
    reporters.get_reporter("pstats").write(profile, path)
    return pstats.Stats(str(path), stream=io.StringIO())


@pytest.mark.parametrize("fixture", ["simple", "multifile"])
def test_pstats_loads_and_adds_up(
    fixture: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    profile = request.getfixturevalue(fixture)
    stats = _load_stats(profile, tmp_path)
    assert stats.total_tt == pytest.approx(proc.total_cpu(profile), rel=1e-6)  # type: ignore[attr-defined]
    out = io.StringIO()
    stats.stream = out  # type: ignore[attr-defined]
    stats.sort_stats("cumulative").print_stats(5)
    stats.sort_stats("tottime").print_callers(3)
    stats.print_callees(3)
    assert "function calls in" in out.getvalue()


def test_pstats_estimates(simple: dict[str, Any]) -> None:
    stats = to_stats(simple)
    checksum = ("/home/ada/demo/simple.py", 5, "checksum")
    main = ("/home/ada/demo/simple.py", 13, "main")
    cc, nc, tt, ct, callers = stats[checksum]
    assert (cc, nc) == (335, 335)  # samples, not calls
    assert tt == pytest.approx(3.35)  # only ever the innermost frame
    assert ct == pytest.approx(3.35)
    assert callers[main][:2] == (91 + 38 + 24 + 2,) * 2
    assert callers[main][2] == pytest.approx(0.911 + 0.378 + 0.241 + 0.02)  # tottime via main
    run = ("/usr/lib/python3.11/threading.py", 982, "Thread.run")
    assert callers[run][0] == 180
    assert stats[("~", 0, "<no Python stack>")][2] == pytest.approx(0.042)
    # library functions are keyed by the first line seen, Thread.start had no own time
    start = ("/usr/lib/python3.11/threading.py", 964, "Thread.start")
    assert stats[start][2:4] == pytest.approx((0.0, 0.01))


def test_pstats_counts_recursion_once_per_stack(simple: dict[str, Any]) -> None:
    simple["frames"].append(dict(simple["frames"][1], lineno=17))  # main, calling itself
    simple["stacks"][1]["frames"] = [0, 16, 1, 3]
    stats = to_stats(simple)
    main = ("/home/ada/demo/simple.py", 13, "main")
    cpu = proc.cpu_s(simple["stacks"][1])
    without = to_stats(copy.deepcopy(simple) | {"stacks": simple["stacks"][2:]})
    assert stats[main][3] - without[main][3] == pytest.approx(cpu)
    assert stats[main][4][main][0] == simple["stacks"][1]["samples"]  # main -> main


def test_pstats_of_an_empty_profile_still_loads(simple: dict[str, Any], tmp_path: Path) -> None:
    simple.update(stacks=[], cpu_python_s=0, cpu_native_s=0, cpu_system_s=0, samples=0)
    assert _load_stats(simple, tmp_path).total_tt == 0  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- json


def test_json_reemits_the_profile(multifile: dict[str, Any]) -> None:
    out = io.StringIO()
    reporters.get_reporter("json").write(multifile, out)
    doc = json.loads(out.getvalue())
    assert doc == multifile
    assert_valid_profile(doc)


# --------------------------------------------------------------------------- registry


def test_formats_are_built_in_by_name() -> None:
    for name in FORMATS:
        reporter = reporters.get_reporter(name)
        module, cls, _ = reporters.FORMATS.builtin[name]
        assert type(reporter) is getattr(_module(module.rsplit(".", 1)[1]), cls)
        assert reporter.binary is (name == "pstats")
    assert set(FORMATS) | {"html", "terminal"} == set(reporters.available())
    with pytest.raises(reporters.UnknownReporterError):
        reporters.get_reporter("svg")


def test_view_offers_what_the_registry_has(capsys: Capture) -> None:
    class Upper(Reporter[Any]):
        def render(self, doc: Any) -> str:
            return str(doc["program"]).upper() + "\n"

    reporters.register("upper", Upper)
    try:
        assert view.main(["--format", "upper", str(FIXTURES / "cpu_simple.json")]) == 0
        assert capsys.readouterr().out == "SIMPLE.PY\n"
    finally:
        reporters.unregister("upper")
    assert view.main(["--format", "upper", str(FIXTURES / "cpu_simple.json")]) == 2
    assert "invalid choice: 'upper'" in capsys.readouterr().err


# --------------------------------------------------------------------------- spyglass view


@pytest.mark.parametrize("fmt", FORMATS)
def test_view_writes_every_format(fmt: str, fixtures_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / f"out.{fmt}"
    assert view.main(["--format", fmt, "-o", str(out), str(fixtures_dir / "cpu_simple.json")]) == 0
    if fmt == "pstats":
        assert pstats.Stats(str(out)).total_tt > 3  # type: ignore[attr-defined]
    elif fmt == "collapsed":
        assert out.read_text().count("\n") == 9
    else:
        assert json.loads(out.read_text())


def test_view_processors_apply_to_every_format(fixtures_dir: Path, capsys: Capture) -> None:
    argv = ["--format", "json", "--profile-exclude", "PIL", "--top", "3", "--collapse-threads"]
    assert view.main([*argv, str(fixtures_dir / "cpu_multifile.json")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert_valid_profile(doc)
    assert sum(len(f["lines"]) for f in doc["files"].values()) == 3
    assert not any("PIL" in path for path in doc["files"]) and len(doc["threads"]) == 1


def test_view_collapsed_weight_option(fixtures_dir: Path, capsys: Capture) -> None:
    argv = ["--format", "collapsed", "--weight", "samples", str(fixtures_dir / "cpu_simple.json")]
    assert view.main(argv) == 0
    assert sum(int(x.rsplit(" ", 1)[1]) for x in capsys.readouterr().out.splitlines()) == 340
    assert view.main(["--weight", "samples", str(fixtures_dir / "cpu_simple.json")]) == 2
    assert capsys.readouterr().err == (
        "spyglass: error: --weight applies to the collapsed format, not to terminal\n"
    )


def test_view_refuses_binary_on_a_terminal(
    fixtures_dir: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert view.main(["--format", "pstats", str(fixtures_dir / "cpu_simple.json")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "spyglass: error: the pstats format is binary: write it to a file with -o FILE\n"


def test_view_pipes_binary(
    simple: dict[str, Any], fixtures_dir: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert view.main(["--format", "pstats", str(fixtures_dir / "cpu_simple.json")]) == 0
    assert capsysbinary.readouterr().out == _module("pstats_format").dumps(simple)


def test_min_share_for_the_terminal_hides_rows(fixtures_dir: Path, capsys: Capture) -> None:
    path = str(fixtures_dir / "cpu_multifile.json")
    assert view.main([path]) == 0
    default = capsys.readouterr().out
    assert view.main(["--min-share", "0", path]) == 0
    everything = capsys.readouterr().out
    assert "more lines below" in default and "more lines below" not in everything


@pytest.fixture
def run_json(tmp_path: Path) -> Path:
    """A profile to view, alone in a directory of its own."""
    path = tmp_path / "run.json"
    shutil.copy(FIXTURES / "cpu_simple.json", path)
    return path


def test_view_html_goes_next_to_the_profile(run_json: Path, capsys: Capture) -> None:
    assert view.main(["--html", str(run_json)]) == 0
    page = run_json.with_suffix(".html")
    out, err = capsys.readouterr()
    assert out == "" and err == f"spyglass: HTML report written to {page}\n"
    html = _module("html")
    profile = json.loads(run_json.read_text(encoding="utf-8"))
    assert page.read_text(encoding="utf-8") == html.render_html(profile)
    assert sorted(p.name for p in run_json.parent.iterdir()) == ["run.html", "run.json"]


def test_view_format_html_to_a_file(run_json: Path, tmp_path: Path, capsys: Capture) -> None:
    page = tmp_path / "elsewhere.html"
    argv = ["--format", "html", "--top", "2", "-o", str(page), str(run_json)]
    assert view.main(argv) == 0
    assert capsys.readouterr().err == f"spyglass: HTML report written to {page}\n"
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and 'id="profile-data"' in text
    assert not run_json.with_suffix(".html").exists()
    # --top applies to the page's data as to every format
    island = text.split('id="profile-data">', 1)[1].split("</script>", 1)[0]
    assert sum(len(f["lines"]) for f in unpack(json.loads(island))["files"].values()) == 2


def test_view_html_never_overwrites_the_profile(tmp_path: Path, capsys: Capture) -> None:
    odd = tmp_path / "run.html"  # a profile whose name ends in .html
    shutil.copy(FIXTURES / "cpu_simple.json", odd)
    assert view.main(["--html", str(odd)]) == 0
    assert json.loads(odd.read_text(encoding="utf-8"))["program"] == "simple.py"
    assert (tmp_path / "run.html.html").read_text(encoding="utf-8").startswith("<!DOCTYPE")
    assert capsys.readouterr().err.endswith("run.html.html\n")


def test_view_html_open(run_json: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture) -> None:
    opened: list[str] = []

    def open_(url: str) -> bool:
        opened.append(url)
        return True

    monkeypatch.setattr("webbrowser.open", open_)
    assert view.main(["--html", "--open", str(run_json)]) == 0
    assert opened == [run_json.with_suffix(".html").resolve().as_uri()]
    monkeypatch.setattr("webbrowser.open", lambda url: False)
    assert view.main(["--html", "--open", str(run_json)]) == 2  # said, and not a success
    assert capsys.readouterr().err.splitlines()[-1] == (
        "spyglass: error: could not start a web browser; the file is "
        f"{run_json.with_suffix('.html')}"
    )


def test_view_html_unwritable_is_one_line(run_json: Path, capsys: Capture) -> None:
    page = run_json.parent / "missing" / "r.html"
    assert view.main(["--html", "-o", str(page), str(run_json)]) == 2
    assert capsys.readouterr().err == (
        f"spyglass: error: cannot write {page}: no such file or directory\n"
    )


def test_open_needs_a_file(fixtures_dir: Path, capsys: Capture) -> None:
    assert view.main(["--open", "--format", "json", str(fixtures_dir / "cpu_simple.json")]) == 2
    assert capsys.readouterr().err == "spyglass: error: --open needs -o FILE (or the html format)\n"


def test_open_opens_the_written_file(
    fixtures_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url: opened.append(url) or True)
    out = tmp_path / "s.json"
    argv = ["--format", "speedscope", "-o", str(out), "--open"]
    assert view.main([*argv, str(fixtures_dir / "cpu_simple.json")]) == 0
    assert opened == [out.resolve().as_uri()]


def test_unwritable_output_is_one_line(fixtures_dir: Path, tmp_path: Path, capsys: Capture) -> None:
    out = tmp_path / "missing" / "x.folded"
    argv = ["--format", "collapsed", "-o", str(out), str(fixtures_dir / "cpu_simple.json")]
    assert view.main(argv) == 2
    assert (
        capsys.readouterr().err
        == f"spyglass: error: cannot write {out}: no such file or directory\n"
    )
