"""One name for one module's file across hosts: profiles of the same code installed under
different prefixes (another virtual environment, another Python build) name its files by
different absolute paths, which a merge would keep apart.

A library file is known by what follows its last ``site-packages/`` (or Debian's
``dist-packages/``), a standard-library file by what follows ``lib/python3.X/`` (the
version kept: another version is other code). The first input's path for a module names
it in the merge; the program's own files are left as they are (nothing says that two
paths outside the libraries hold the same code).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from spyglass.profile_model.renames import rename_file

_LIBRARY = re.compile(r"/(?:site|dist)-packages/(.+)$")
_STDLIB = re.compile(r"/lib/(python3\.\d+)/(.+)$")


def module_key(path: str) -> str | None:
    """What a file is known by whatever its prefix, or None for a file of no library."""
    path = path.replace("\\", "/")
    found = _LIBRARY.search(path)
    if found:
        return "site-packages/" + found[1]
    stdlib = _STDLIB.search(path)
    if stdlib and "/site-packages/" not in path:
        return f"{stdlib[1]}/{stdlib[2]}"
    return None


def unify(profiles: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``profiles`` with each library file named as the first input that has it names it.
    Inputs are not changed: one with files to rename is copied as far as renaming needs."""
    first: dict[str, str] = {}
    out = []
    for profile in profiles:
        renames = {}
        for path in profile["files"]:
            key = module_key(path)
            if key is None:
                continue
            name = first.setdefault(key, path)
            if name != path and name not in profile["files"]:
                renames[path] = name
        if renames:
            profile = {
                **profile,
                "files": dict(profile["files"]),
                "frames": [dict(frame) for frame in profile["frames"]],
            }
            for old, new in renames.items():
                rename_file(profile, old, new)
        out.append(profile)
    return out
