"""Loading, checking and writing profiles: every failure is one clear line."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from spyglass.profile_model import io as profile_io
from spyglass.profile_model.io import (
    ProfileError,
    check_consistency,
    check_profile,
    dump_profile,
    load_profile,
    validate,
)


def _message(path: Path | str) -> str:
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    assert info.value.__suppress_context__ or info.value.__cause__ is None
    return message


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["cpu_simple.json", "cpu_multifile.json"])
def test_load_good_fixtures(fixtures_dir: Path, name: str) -> None:
    profile = load_profile(fixtures_dir / name)
    assert profile["format"] == "spyglass-profile"
    assert profile["schema_version"] == 3
    assert profile["memory_profiled"] is False
    assert profile["files"]
    assert load_profile(str(fixtures_dir / name)) == profile


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    assert _message(path) == f"{path} does not exist"


def test_directory(tmp_path: Path) -> None:
    assert _message(tmp_path) == f"{tmp_path} is a directory, not a profile"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file(tmp_path: Path, simple: dict[str, Any]) -> None:
    path = _write(tmp_path, "locked.json", json.dumps(simple))
    path.chmod(0)
    try:
        assert _message(path) == f"cannot read {path}: permission denied"
    finally:
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_permission_denied_is_reported(
    tmp_path: Path, simple: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, "locked.json", json.dumps(simple))

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(profile_io, "open", refuse, raising=False)
    assert _message(path) == f"cannot read {path}: permission denied"


def test_other_os_errors_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(profile_io, "open", fail, raising=False)
    assert _message(tmp_path / "x.json") == f"cannot read {tmp_path / 'x.json'}: input/output error"


def test_not_json_reports_line_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "x.json", '{\n  "format": "spyglass-profile",\n    oops\n}\n')
    message = _message(path)
    assert message.startswith(f"{path} is not valid JSON (line 3, column 5)")


def test_truncated_fixture(fixtures_dir: Path) -> None:
    path = fixtures_dir / "not_json.json"
    message = _message(path)
    assert message.startswith(f"{path} is not valid JSON (line ")
    assert "unterminated string" in message


def test_empty_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "empty.json", "  \n")
    assert _message(path) == f"{path} is empty, not a spyglass profile"


def test_binary_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "bin.json", b"\x89PNG\r\n\x1a\n\xff\xfe")
    assert _message(path).startswith(f"{path} is not valid JSON (not UTF-8 text")


def test_foreign_json(fixtures_dir: Path) -> None:
    path = fixtures_dir / "foreign.json"
    assert _message(path) == f"{path} is not a spyglass profile"


@pytest.mark.parametrize("doc", [[1, 2, 3], "spyglass-profile", None, {"format": "other"}])
def test_json_that_is_not_a_profile(tmp_path: Path, doc: object) -> None:
    path = _write(tmp_path, "other.json", json.dumps(doc))
    assert _message(path) == f"{path} is not a spyglass profile"


def test_future_version(fixtures_dir: Path) -> None:
    path = fixtures_dir / "future_version.json"
    assert _message(path) == (
        f"{path} was written with schema version 4; this spyglass reads versions 1 to 3; "
        "upgrade spyglass"
    )


def test_older_version(tmp_path: Path, simple: dict[str, Any]) -> None:
    simple["schema_version"] = 0
    path = _write(tmp_path, "old.json", json.dumps(simple))
    message = _message(path)
    assert message.startswith(f"{path} was written with schema version 0; this spyglass reads")
    assert "upgrade" not in message


def test_version_of_the_wrong_type(tmp_path: Path, simple: dict[str, Any]) -> None:
    simple["schema_version"] = "1"
    path = _write(tmp_path, "v.json", json.dumps(simple))
    assert _message(path) == (
        f"{path} is not a valid spyglass profile: schema_version should be an integer, got a string"
    )


def test_missing_top_level_key(tmp_path: Path, simple: dict[str, Any]) -> None:
    del simple["elapsed_s"]
    path = _write(tmp_path, "m.json", json.dumps(simple))
    assert _message(path) == f"{path} is not a valid spyglass profile: missing key 'elapsed_s'"


def test_several_problems_are_counted(tmp_path: Path, simple: dict[str, Any]) -> None:
    for key in ("elapsed_s", "platform", "frames"):
        del simple[key]
    path = _write(tmp_path, "m.json", json.dumps(simple))
    message = _message(path)
    assert message.startswith(f"{path} is not a valid spyglass profile: missing key ")
    assert message.endswith("(and 2 more problems)")


def test_nested_problem_names_its_location(tmp_path: Path, simple: dict[str, Any]) -> None:
    del simple["files"]["/home/ada/demo/simple.py"]["lines"][2]["wait_s"]
    simple["threads"][1]["tid"] = "48230"
    path = _write(tmp_path, "n.json", json.dumps(simple))
    assert _message(path) == (
        f"{path} is not a valid spyglass profile: threads[1].tid should be an integer, "
        "got a string (and 1 more problem)"
    )
    assert check_profile(simple) == [
        "threads[1].tid should be an integer, got a string",
        "missing key 'wait_s' in files[\"/home/ada/demo/simple.py\"].lines[2]",
    ]


def test_unknown_keys_are_ignored(simple: dict[str, Any]) -> None:
    simple["future_thing"] = {"x": 1}
    simple["threads"][0]["cpu_gpu_s"] = 0.5
    assert validate(simple, "p.json") is simple


def test_check_profile_on_non_objects() -> None:
    assert check_profile([]) == ["format is not 'spyglass-profile'"]
    assert check_profile({"format": "spyglass-profile", "schema_version": 4}) == [
        "schema_version is not 3"
    ]


def test_containers_of_the_wrong_type_stop_the_check(simple: dict[str, Any]) -> None:
    simple["files"] = []
    assert check_profile(simple) == ["files should be an object, got a list"]


# --------------------------------------------------------------------------- consistency


@pytest.mark.parametrize("name", ["cpu_simple.json", "cpu_multifile.json"])
def test_fixtures_are_consistent(fixtures_dir: Path, name: str) -> None:
    profile = load_profile(fixtures_dir / name)
    assert check_consistency(profile) == []


def test_fixtures_are_realistic(multifile: dict[str, Any], simple: dict[str, Any]) -> None:
    for profile in (simple, multifile):
        for thread in profile["threads"]:
            busy = sum(thread[k] for k in ("cpu_python_s", "cpu_native_s", "cpu_system_s"))
            assert busy + thread["wait_s"] <= profile["elapsed_s"]
        # One GIL: Python time of all threads together fits in the wall time.
        assert profile["cpu_python_s"] <= profile["elapsed_s"]
    paths = list(multifile["files"])
    assert any("site-packages" in p for p in paths)
    lines = [ln for f in multifile["files"].values() for ln in f["lines"]]
    assert any(ln["samples"] == 0 and ln["wait_s"] > 0 for ln in lines)
    assert any(0 < ln["samples"] < 10 for ln in lines)
    assert [t["name"] for t in simple["threads"]] == ["MainThread", "worker"]
    assert len(simple["files"]) == 1 and len(simple["stacks"]) > 0


def test_consistency_catches_broken_sums(simple: dict[str, Any]) -> None:
    entry = simple["files"]["/home/ada/demo/simple.py"]
    entry["lines"][0]["cpu_python_s"] += 0.5
    problems = check_consistency(simple)
    assert any("vs its lines: cpu_python_s" in p for p in problems)


def test_consistency_catches_order_and_indexes(simple: dict[str, Any]) -> None:
    broken = copy.deepcopy(simple)
    lines = broken["files"]["/home/ada/demo/simple.py"]["lines"]
    lines[0], lines[1] = lines[1], lines[0]
    broken["stacks"].reverse()
    broken["stacks"][0]["frames"].append(999)
    problems = check_consistency(broken)
    assert any("not sorted by unique lineno" in p for p in problems)
    assert "stacks are not sorted by descending total time" in problems
    assert any("beyond the frame table" in p for p in problems)


def test_consistency_catches_totals_that_do_not_add_up(simple: dict[str, Any]) -> None:
    simple["wait_s"] += 1.0
    problems = check_consistency(simple)
    assert any(p.startswith("totals vs files + unattributed: wait_s") for p in problems)
    assert any(p.startswith("totals vs threads: wait_s") for p in problems)


# --------------------------------------------------------------------------- writing


def test_dump_round_trip(tmp_path: Path, multifile: dict[str, Any]) -> None:
    path = tmp_path / "out.json"
    dump_profile(multifile, path)
    assert load_profile(path) == multifile
    assert path.read_text(encoding="utf-8").endswith("}\n")
    dump_profile(multifile, path, indent=2)
    assert load_profile(path) == multifile
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_dump_replaces_and_respects_umask(tmp_path: Path, simple: dict[str, Any]) -> None:
    path = tmp_path / "out.json"
    path.write_text("old", encoding="utf-8")
    old = os.umask(0o022)
    try:
        dump_profile(simple, path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert json.loads(path.read_text(encoding="utf-8"))["program"] == "simple.py"


def test_dump_keeps_the_old_file_when_serialising_fails(
    tmp_path: Path, simple: dict[str, Any]
) -> None:
    path = tmp_path / "out.json"
    path.write_text("old", encoding="utf-8")
    simple["elapsed_s"] = float("nan")
    with pytest.raises(ProfileError, match=r"^cannot write .*out\.json: the profile is not JSON"):
        dump_profile(simple, path)
    assert path.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_dump_into_a_missing_directory(tmp_path: Path, simple: dict[str, Any]) -> None:
    path = tmp_path / "missing" / "out.json"
    with pytest.raises(ProfileError) as info:
        dump_profile(simple, path)
    assert str(info.value) == f"cannot write {path}: no such file or directory"
