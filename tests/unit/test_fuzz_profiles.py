"""A short run of the profile fuzzer (tests/profile_fuzzing.py): a few hundred generated
profiles, good and hostile, through view in every format, merge and diff. The long run
is bench/fuzz_profiles.py."""

from __future__ import annotations

from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402

from profile_fuzzing import check, fresh_dir, profiles, to_text  # noqa: E402

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    database=None,
    derandomize=True,  # the same examples on every run: CI does not flake
    suppress_health_check=list(HealthCheck),
)


@SETTINGS
@given(doc=profiles())
def test_every_profile_renders_or_is_one_line_of_error(
    tmp_path_factory: pytest.TempPathFactory, doc: object
) -> None:
    check(to_text(doc), fresh_dir(tmp_path_factory.getbasetemp() / "fuzz"))


def test_the_hand_made_cases_of_the_issue(tmp_path: Path) -> None:
    import json

    from profile_fuzzing import REFERENCE

    base = json.loads(REFERENCE.read_text())
    text = json.dumps(base)
    cases = {
        "1e308": text.replace('"cpu_python_s": 2.784', '"cpu_python_s": 1e308'),
        "Infinity": text.replace('"cpu_python_s": 2.784', '"cpu_python_s": Infinity'),
        "long int": text.replace('"samples": 340', '"samples": ' + "9" * 5000),
    }
    past = json.loads(text)
    past["stacks"][0]["frames"].append(len(past["frames"]))
    cases["frame past the table"] = json.dumps(past)
    for name, case in cases.items():
        assert not check(case, fresh_dir(tmp_path)), name
