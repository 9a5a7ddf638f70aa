"""Every module of the package imports on its own, in a fresh interpreter. Type-only
imports sit under ``if TYPE_CHECKING:`` (typing and the readers cost every run's end
milliseconds); the type checker sees those names and cannot tell that a module which
imports one of them at run time fails, so this does."""

from __future__ import annotations

import importlib.util
import pkgutil
import subprocess
import sys

import spyglass

# Integrations whose own dependency is optional: they refuse to import without it.
_NEEDS = {"spyglass.ray": "ray", "spyglass.dask": "distributed"}


def _modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(spyglass.__path__, "spyglass.")]
    return [n for n in names if n not in _NEEDS or importlib.util.find_spec(_NEEDS[n])]


def test_every_module_imports_in_a_fresh_interpreter() -> None:
    names = _modules()
    assert "spyglass.reporters.terminal" in names and len(names) > 50
    code = "import importlib, sys\nname = sys.argv[1]\nimportlib.import_module(name)\n"
    failed = []
    for name in names:
        proc = subprocess.run(
            [sys.executable, "-c", code, name], capture_output=True, text=True, timeout=60
        )
        if proc.returncode != 0:
            failed.append(f"{name}: {proc.stderr.strip().splitlines()[-1]}")
    assert not failed, "\n".join(failed)
