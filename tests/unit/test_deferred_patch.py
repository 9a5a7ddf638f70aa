"""A patch of a module the program has not imported yet (threading, in a program that
has not needed it) is made as the program imports it, and leaves no trace of how."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from spyglass.runtime.stdlib_patches import _WhenImported


@pytest.fixture
def fresh_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = "spyglass_test_deferred_patch"
    (tmp_path / f"{name}.py").write_text("import sys\nSEEN_PATCHED = hasattr(sys, 'patched')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def test_the_patch_follows_the_modules_own_code(
    fresh_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    before = list(sys.meta_path)
    patched: list[ModuleType] = []

    def patch(module: ModuleType) -> None:
        assert hasattr(module, "SEEN_PATCHED")  # its code has run
        patched.append(module)

    finder = _WhenImported(fresh_module, patch)
    sys.meta_path.insert(0, finder)
    other = __import__("json")  # another module: nothing happens
    assert other is sys.modules["json"] and not patched and sys.meta_path[0] is finder

    module = __import__(fresh_module)
    assert patched == [module]
    assert module.SEEN_PATCHED is False
    # The import looks as it would have without the finder, which has left.
    assert sys.meta_path == before
    assert type(module.__loader__).__name__ == "SourceFileLoader"
    assert module.__spec__ is not None and module.__spec__.loader is module.__loader__
    # A second import is the cached module; the patch is not made twice.
    assert __import__(fresh_module) is module and patched == [module]


def test_nothing_found_nothing_patched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    calls: list[ModuleType] = []
    finder = _WhenImported("spyglass_no_such_module", calls.append)
    sys.meta_path.insert(0, finder)
    with pytest.raises(ModuleNotFoundError):
        __import__("spyglass_no_such_module")
    assert not calls and sys.meta_path[0] is finder  # still waiting for the module


def test_a_copy_made_from_the_spec_by_hand_is_not_the_import(
    fresh_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    patched: list[ModuleType] = []
    sys.meta_path.insert(0, _WhenImported(fresh_module, patched.append))
    spec = importlib.util.find_spec(fresh_module)
    assert spec is not None and spec.loader is not None
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    assert not patched  # still waiting for the real import
    module = __import__(fresh_module)
    assert patched == [module] and module is not copy
