"""ProfileOptions across the process boundary: one to-JSON/from-JSON pair."""

from __future__ import annotations

import json
import marshal
import os
from pathlib import Path

import pytest

from spyglass.runtime import run_environment
from spyglass.runtime.options import CARRIED, ProfileOptions


def _unusual() -> ProfileOptions:
    """Options with no field at its default, so that one left out of the round trip shows."""
    return ProfileOptions(
        interval_s=0.003,
        memory=False,
        memory_window=1 << 20,
        gpu=False,
        program_paths=["/srv/app"],
        profile_all=True,
        profile_only=["app/"],
        profile_exclude=["vendor/"],
        pseudo_files=["<string>"],
        report=False,
        html="r.html",
    )


def test_every_field_a_child_profiles_with_crosses(tmp_path: Path) -> None:
    sent = _unusual()
    data = marshal.loads(marshal.dumps(sent.to_json(), 2))  # as the bootstrap reads it
    assert data == json.loads(json.dumps(sent.to_json()))
    got = ProfileOptions.from_json(data, report=False)
    defaults = ProfileOptions()
    for name in CARRIED:
        assert getattr(got, name) == getattr(sent, name) != getattr(defaults, name), name
    assert got.html is None and got.report is False  # the run's end stays with the parent
    data["program_paths"].append("/elsewhere")  # a copy: the parent's list is its own
    assert sent.program_paths == ["/srv/app"]


def test_the_profile_records_the_options_under_its_own_names() -> None:
    assert _unusual().recorded() == {
        "interval_s": 0.003,
        "memory": False,
        "memory_window": 1 << 20,
        "gpu": False,
        "program_path": ["/srv/app"],
        "profile_all": True,
        "profile_only": ["app/"],
        "profile_exclude": ["vendor/"],
    }


def test_the_run_configuration_carries_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", "")
    monkeypatch.delenv(run_environment.CHILD_CONFIG_ENV, raising=False)
    path = run_environment.prepare_children(_unusual(), paths_given=False)
    assert path is not None
    with open(os.environ[run_environment.CHILD_CONFIG_ENV], "rb") as f:
        config = marshal.load(f)
    assert config["options"] == _unusual().to_json() and config["paths_given"] is False
