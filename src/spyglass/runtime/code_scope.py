"""What counts as the user's code: the filter handed to the native attribution."""

from __future__ import annotations

import os
import site
import sys

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


def _install_dirs() -> list[str]:
    """Where this interpreter keeps the standard library and installed packages: what
    sysconfig's stdlib, platstdlib, purelib and platlib paths are under its default
    scheme, worked out without importing sysconfig (milliseconds for every process of a
    run), and site's own list, which holds purelib and platlib under every scheme."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    dirs = [
        os.path.dirname(os.__file__),  # stdlib
        os.path.join(sys.exec_prefix, getattr(sys, "platlibdir", "lib"), version),  # platstdlib
    ]
    dirs += list(getattr(site, "getsitepackages", list)())
    user_site = getattr(site, "getusersitepackages", lambda: "")()
    if isinstance(user_site, str):
        dirs.append(user_site)
    return dirs


_install_prefixes: list[str] = []


def library_prefixes() -> list[str]:
    """Directories of the standard library and installed packages (those the program put
    on sys.path as it ran included)."""
    if not _install_prefixes:
        _install_prefixes.extend(_with_realpaths(_install_dirs()))
    on_path = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    return _install_prefixes + [p for p in _with_realpaths(on_path) if p not in _install_prefixes]


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
