"""Bad input gives one line and a non-zero exit, never a traceback (issue 13, items 6 and
7): numbers no renderer can show, frame indexes past the table, deep nesting, a size of
"inf", a script too deeply nested to compile, a profile too large for a terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spyglass.cli.main import main
from spyglass.profile_model.io import ProfileError, load_profile
from spyglass.runtime.target import Target, TargetError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
BASE = (FIXTURES / "cpu_simple.json").read_text()
LINE0 = 'files["/home/ada/demo/simple.py"].lines[0]'


def _with(edit: Any) -> str:
    doc = json.loads(BASE)
    edit(doc)
    return json.dumps(doc)


def _set_line(key: str, value: Any) -> Any:
    return lambda d: d["files"]["/home/ada/demo/simple.py"]["lines"][0].__setitem__(key, value)


CASES = {
    "1e308": (
        BASE.replace('"cpu_python_s": 2.784', '"cpu_python_s": 1e308'),
        "cpu_python_s is 1e+308",
    ),
    "Infinity": (
        BASE.replace('"cpu_python_s": 2.784', '"cpu_python_s": Infinity'),
        "cpu_python_s is inf",
    ),
    "NaN": (BASE.replace('"elapsed_s": 3.412667', '"elapsed_s": NaN'), "elapsed_s is nan"),
    "1e400": (BASE.replace('"wait_s": 3.334', '"wait_s": 1e400', 1), "wait_s is inf"),
    "long int": (
        BASE.replace('"samples": 340', '"samples": ' + "9" * 5000),
        "samples is an integer of 5000 digits",
    ),
    "nested line value": (_with(_set_line("wait_s", 1e300)), f"{LINE0}.wait_s is 1e+300"),
    "frame past the table": (
        _with(lambda d: d["stacks"][0]["frames"].append(99)),
        "stacks[0].frames[4] is 99, past the frame table",
    ),
    "dropped_samples not a count": (  # found by the fuzzer: merge added it up with int()
        _with(lambda d: d.__setitem__("dropped_samples", "x")),
        "dropped_samples should be a non-negative integer",
    ),
    "deep nesting": (
        _with(lambda d: d.__setitem__("extra", json.loads("[" * 200 + "]" * 200))),
        "nested more than 64 levels deep",
    ),
    "deeper than the parser": (
        BASE.rstrip()[:-1] + ', "x": ' + "[" * 100000 + "]" * 100000 + "}",
        "nested too deeply",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_value_is_named_by_its_path(tmp_path: Path, case: str) -> None:
    text, expected = CASES[case]
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ProfileError) as e:
        load_profile(path)
    assert expected in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(
    "command",
    [
        ["view", "--format", "terminal"],
        ["view", "--format", "collapsed"],
        ["view", "--format", "pstats", "-o", "{out}"],
        ["view", "--format", "html", "-o", "{out}"],
        ["view", "--format", "speedscope"],
        ["merge", "-o", "{out}", "{ok}"],
        ["diff", "--format", "json", "-o", "{out}", "{ok}"],
    ],
)
def test_every_command_gives_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, command: list[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(CASES[case][0])
    out = tmp_path / "out"
    argv = [
        a.replace("{out}", str(out)).replace("{ok}", str(FIXTURES / "cpu_simple.json"))
        for a in command
    ]
    assert main([*argv, str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("spyglass: error: ") and captured.err.count("\n") == 1
    assert not out.exists()  # nothing half-written


@pytest.mark.parametrize("size", ["inf", "-inf", "nan", "1e400", "infG"])
def test_a_size_that_is_not_a_number_is_one_line(
    capsys: pytest.CaptureFixture[str], size: str
) -> None:
    with pytest.raises(SystemExit) as e:
        main(["run", "--memory-window", size, "-c", "pass"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--memory-window" in err


@pytest.mark.skipif(
    sys.version_info < (3, 10),
    reason="CPython 3.9's own compiler overflows its C stack on this script (plain python crashes)",
)
def test_a_script_too_deep_to_compile_is_one_line(tmp_path: Path) -> None:
    script = tmp_path / "deep.py"
    script.write_text("x = 1" + " + 1" * 200_000)
    with pytest.raises(TargetError):
        Target("script", str(script), []).prepare()
    done = subprocess.run(
        [sys.executable, "-m", "spyglass", "run", "-o", str(tmp_path / "p.json"), str(script)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "cannot compile" in done.stderr


def test_a_profile_too_large_for_a_terminal_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(BASE)
    entry = doc["files"]["/home/ada/demo/simple.py"]
    zero = {k: 0 for k in ("cpu_python_s", "cpu_native_s", "cpu_system_s", "wait_s", "samples")}
    entry["lines"] = entry["lines"] + [
        {"lineno": 1000 + i, "source": "pass", **zero} for i in range(25_000)
    ]
    big = tmp_path / "big.json"
    big.write_text(json.dumps(doc))
    assert main(["view", str(big)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--top" in err
    assert main(["view", "--top", "5", str(big)]) == 0
