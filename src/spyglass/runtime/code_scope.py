"""What counts as the user's code: the filter handed to the native attribution."""

from __future__ import annotations

import os
import site
import sys
import sysconfig

import spyglass._native as _native
from spyglass.runtime.options import ProfileOptions

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from collections.abc import Iterable

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))

# Functions narrowed to with @spyglass.profile: (absolute file, first line).
_narrowed: list[tuple[str, int]] = []


def narrow_to(filename: str, first_lineno: int) -> None:
    entry = (os.path.abspath(filename) if not filename.startswith("<") else filename, first_lineno)
    if entry not in _narrowed:
        _narrowed.append(entry)


def narrowed_functions() -> list[tuple[str, int]]:
    return list(_narrowed)


def _with_realpaths(paths: Iterable[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if not p:
            continue
        for variant in (os.path.abspath(p), os.path.realpath(p)):
            if variant not in out:
                out.append(variant)
    return out


def library_prefixes() -> list[str]:
    """Directories of the standard library and installed packages."""
    candidates = [
        sysconfig.get_paths().get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")
    ]
    candidates += list(getattr(site, "getsitepackages", list)())
    user_site = getattr(site, "getusersitepackages", lambda: "")()
    if isinstance(user_site, str):
        candidates.append(user_site)
    candidates += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    return _with_realpaths(candidates)


def filter_config(options: ProfileOptions) -> _native.FilterConfig:
    config = _native.FilterConfig()
    config.program_paths = _with_realpaths(options.program_paths)
    config.library_prefixes = library_prefixes()
    # runpy runs `-m` targets and is frozen on 3.11+: its frames are ours, not the program's.
    runpy_file = os.path.join(os.path.dirname(os.__file__), "runpy.py")
    config.internal_prefixes = [_PACKAGE_DIR, runpy_file, "<frozen runpy>"]
    config.only = list(options.profile_only)
    config.exclude = list(options.profile_exclude)
    config.pseudo_files = list(options.pseudo_files)
    config.profile_all = options.profile_all
    config.functions = narrowed_functions()
    return config
