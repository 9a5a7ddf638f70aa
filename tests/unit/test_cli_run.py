"""`spyglass run`'s command line: which arguments are spyglass's and which the program's,
and the options it makes (the program itself is not run here)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from spyglass.cli import run, run_quick_args
from spyglass.cli.common import path_beside
from spyglass.cli.run import _split_target_args, build_parser
from spyglass.runtime import supervisor
from spyglass.runtime.options import ProfileOptions

Capture = pytest.CaptureFixture[str]


@pytest.mark.parametrize(
    ("argv", "ours", "theirs"),
    [
        (["app.py", "-o", "x"], ["app.py"], ["-o", "x"]),
        (["-o", "p.json", "app.py", "a"], ["-o", "p.json", "app.py"], ["a"]),
        (["-m", "http.server", "8000"], ["-m", "http.server"], ["8000"]),
        (["-mhttp.server", "--html"], ["-m", "http.server"], ["--html"]),
        # --html alone: the next argument is the script, not the page
        (["--html", "app.py", "--html"], ["--html=", "app.py"], ["--html"]),
        (["--html"], ["--html="], []),
        (["--html", "-o", "p.json", "app.py"], ["--html=", "-o", "p.json", "app.py"], []),
        (["--html", "-c", "pass", "x.html"], ["--html=", "-c", "pass"], ["x.html"]),
        (["--html", "--", "x.html"], ["--html=", "--", "x.html"], []),
        # -- ends spyglass's options: the script is next
        (["-o", "p", "--", "app.py", "a", "-b"], ["-o", "p", "--", "app.py"], ["a", "-b"]),
        (["--"], [], []),
        # --html with a page's name
        (["--html", "out.html", "app.py", "a"], ["--html", "out.html", "app.py"], ["a"]),
        (["--html", "d/Out.HTM", "app.py"], ["--html", "d/Out.HTM", "app.py"], []),
        (["--html=out.txt", "app.py"], ["--html=out.txt", "app.py"], []),
        (["--open", "app.py", "--open"], ["--open", "app.py"], ["--open"]),
    ],
)
def test_split_target_args(argv: list[str], ours: list[str], theirs: list[str]) -> None:
    assert _split_target_args(argv) == (ours, theirs)


@pytest.mark.parametrize(
    ("argv", "html", "program"),
    [
        (["app.py"], None, "app.py"),
        (["--html", "app.py"], "", "app.py"),
        (["--html", "out.html", "app.py"], "out.html", "app.py"),
        (["--html", "-m", "mod"], "", None),
    ],
)
def test_parsed_html(argv: list[str], html: str | None, program: str | None) -> None:
    ns = build_parser().parse_args(_split_target_args(argv)[0])
    assert (ns.html, ns.program) == (html, program)


# Command lines the quick parser must read itself (the common ones), then ones it must
# leave to argparse; both kinds must come out as argparse makes them.
QUICK = [
    ["app.py"],
    ["--no-report", "-o", "p.json", "app.py"],
    ["--outfile", "-", "--cpu-only", "-m", "http.server"],
    ["--html", "app.py"],
    ["--html", "out.html", "--open", "app.py"],
    ["--html=out.txt", "--no-color", "app.py"],
    ["--interval", "0.005", "--program-path", "a", "--program-path", "b", "-c", "pass"],
    ["--memory", "--memory", "--profile-all", "app.py"],
    ["--no-memory", "--no-memory", "app.py"],
    ["-o", "a.json", "-o", "b.json", "app.py"],
    ["--no-gpu", "app.py"],
    ["--gpu", "--gpu", "--cpu-only", "app.py"],
    ["--no-report", "--", "app.py", "-o", "x"],
]
LEFT_TO_ARGPARSE = [
    ["--cpu-only", "--memory", "app.py"],
    ["--gpu", "--no-gpu", "app.py"],
    ["--interval", "20", "app.py"],
    ["--interval", "nan", "app.py"],
    ["--interval", "-1", "app.py"],
    ["--memory-window", "1M", "app.py"],
    ["--profile-only", "a,b", "--profile-exclude", "c", "app.py"],
    ["-o", "--no-report", "app.py"],
    ["--no-rep", "app.py"],
    ["-o"],
    ["--no-report=1", "app.py"],
    ["--", "-app.py"],
]


@pytest.mark.parametrize("argv", QUICK + LEFT_TO_ARGPARSE)
def test_quick_parser_agrees_with_argparse(argv: list[str]) -> None:
    ours = _split_target_args(argv)[0]
    quick = run_quick_args.parse(ours)
    assert (quick is not None) == (argv in QUICK)
    if quick is None:
        return
    full = build_parser().parse_args(ours)
    assert vars(quick) == vars(full)


def test_one_list_of_options_agrees_with_argparse() -> None:
    # The lean module's lists (which _split_target_args and the quick parser read) name
    # exactly the options the full parser declares.
    flags: set[str] = set()
    values: set[str] = set()
    for action in build_parser()._actions:
        takes = action.nargs != 0 and action.option_strings  # store_true/false: nargs 0
        (values if takes else flags).update(action.option_strings)
    assert flags == set(run_quick_args.FLAGS) | {"-h", "--help"}
    assert values == set(run_quick_args.VALUE_OPTIONS) | {"-m", "-c", "--html"}


def test_quick_parser_knows_every_default() -> None:
    assert vars(run_quick_args.defaults()) == vars(build_parser().parse_args([]))


def test_html_path_for() -> None:
    assert path_beside("spyglass-profile.json", ".html") == "spyglass-profile.html"
    assert path_beside("/tmp/runs/a.b.json", ".html") == "/tmp/runs/a.b.html"
    assert path_beside("profile", ".html") == "profile.html"
    assert path_beside("p.html", ".html") == "p.html.html"  # never the profile itself


class Started:
    """Stands in for the Supervisor: records what it would have run."""

    def __init__(self) -> None:
        self.runs: list[tuple[Any, ProfileOptions]] = []

    def __call__(self, target: Any, options: ProfileOptions) -> Started:
        self.runs.append((target, options))
        return self

    def run(self) -> int:
        return 0


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Started:
    monkeypatch.chdir(tmp_path)
    fake = Started()
    monkeypatch.setattr(supervisor, "Supervisor", fake)
    return fake


def test_html_defaults_next_to_the_profile(started: Started, tmp_path: Path) -> None:
    assert run.main(["-o", "p.json", "--html", "app.py", "--flag"]) == 0
    ((target, options),) = started.runs
    assert (target.kind, target.value, target.args) == ("script", "app.py", ["--flag"])
    assert options.outfile == str(tmp_path / "p.json")
    assert options.html == str(tmp_path / "p.html")
    assert options.open_browser is False


def test_html_to_a_named_file(started: Started, tmp_path: Path) -> None:
    (tmp_path / "pages").mkdir()
    assert run.main(["--html", "pages/r.html", "-c", "pass"]) == 0
    options = started.runs[0][1]
    assert options.html == str(tmp_path / "pages" / "r.html")
    assert options.outfile == str(tmp_path / "spyglass-profile.json")


def test_open_implies_html(started: Started, tmp_path: Path) -> None:
    assert run.main(["--open", "--no-report", "app.py"]) == 0
    options = started.runs[0][1]
    assert options.html == str(tmp_path / "spyglass-profile.html")
    assert options.open_browser is True and options.report is False


def test_no_html_by_default(started: Started) -> None:
    assert run.main(["app.py"]) == 0
    options = started.runs[0][1]
    assert options.html is None and options.open_browser is False


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--html", "nowhere/r.html", "app.py"],
            "cannot write the HTML report to '{tmp}/nowhere/r.html': "
            "directory '{tmp}/nowhere' does not exist",
        ),
        (
            ["--html=.", "app.py"],
            "cannot write the HTML report to '{tmp}': it is a directory",
        ),
        (
            ["-o", "p.html", "--html=p.html", "app.py"],
            "the HTML report and the profile are the same file: '{tmp}/p.html'",
        ),
    ],
)
def test_unwritable_html_is_refused_before_the_run(
    started: Started, tmp_path: Path, capsys: Capture, argv: list[str], message: str
) -> None:
    assert run.main(argv) == 2
    assert started.runs == []
    assert capsys.readouterr().err == f"spyglass: error: {message.format(tmp=tmp_path)}\n"
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("outfile", "hint"),
    [("r.html", "--html r.html"), ("r.speedscope.json", "spyglass view -o r.speedscope.json")],
)
def test_a_report_name_for_the_profile_is_refused_before_the_run(
    started: Started, tmp_path: Path, capsys: Capture, outfile: str, hint: str
) -> None:
    assert run.main(["-o", outfile, "app.py"]) == 2
    assert started.runs == []
    err = capsys.readouterr().err
    assert err.startswith(f"spyglass: error: -o writes the JSON profile, and {outfile!r} names")
    assert err.endswith(f"(for the {run.FORMATS.format_for_path(outfile)} report: {hint})\n")
    assert run.main(["-o", "r.json", "app.py"]) == 0 and len(started.runs) == 1
    assert run.main(["-o", "profile", "app.py"]) == 0  # no format's ending: as given


def test_abbreviations_are_not_options(started: Started, capsys: Capture) -> None:
    # "--htm app.py" must not hand app.py to --html
    with pytest.raises(SystemExit):
        run.main(["--htm", "app.py"])
    assert "unrecognized arguments: --htm" in capsys.readouterr().err
    assert started.runs == []


def test_help_mentions_html(capsys: Capture) -> None:
    with pytest.raises(SystemExit):
        run.main(["--help"])
    out = capsys.readouterr().out
    assert "--html [FILE]" in out and "--open" in out
