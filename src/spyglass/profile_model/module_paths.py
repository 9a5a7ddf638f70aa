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

from spyglass.profile_model.renames import rename_file

TYPE_CHECKING = False  # typing costs the end of every run with children milliseconds
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

_PACKAGES = ("/site-packages/", "/dist-packages/")  # of one length


def stdlib_dir(path: str, libs: tuple[str, ...], *, free_threaded: bool) -> tuple[int, int] | None:
    """The first ``<lib>python3.<minor>/`` in ``path`` (``<lib>``: one of ``libs``, such
    as "/lib/"; with ``free_threaded``, ``python3.13t/`` too): where it starts and where
    its last slash is; None when there is none."""
    best: tuple[int, int] | None = None
    for lib in libs:
        marker = lib + "python3."
        at = path.find(marker)
        while at >= 0 and (best is None or at < best[0]):
            end = at + len(marker)
            while end < len(path) and path[end].isdecimal():
                end += 1
            if end > at + len(marker) and free_threaded and path.startswith("t", end):
                end += 1
            if end > at + len(marker) and path.startswith("/", end):
                best = (at, end)
                break
            at = path.find(marker, at + 1)
    return best


def module_key(path: str) -> str | None:
    """What a file is known by whatever its prefix, or None for a file of no library: what
    follows the first ``/site-packages/`` (or ``/dist-packages/``), else the first
    ``/lib/python3.X/`` and what follows it."""
    path = path.replace("\\", "/")
    found = [at for at in map(path.find, _PACKAGES) if at >= 0]
    if found and len(path) > min(found) + len(_PACKAGES[0]):
        return "site-packages/" + path[min(found) + len(_PACKAGES[0]) :]
    if "/site-packages/" in path:
        return None
    found_dir = stdlib_dir(path, ("/lib/",), free_threaded=False)
    if found_dir is not None and found_dir[1] + 1 < len(path):
        start, slash = found_dir
        return f"{path[start + len('/lib/') : slash]}/{path[slash + 1 :]}"
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
