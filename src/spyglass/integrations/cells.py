"""IPython cells as the user's code: which names their code is compiled under, what the
report calls them ("In [7]"), and a profile's files renamed to those labels.

IPython compiles each cell under a name of its own: "<ipython-input-7-…>" in a terminal,
a file in the kernel's temporary directory ("…/ipykernel_PID/HASH.py") in Jupyter. Its
compiler keeps the cell's number for each name it made, and the cell's text in linecache,
which is where the profile's source lines come from.
"""

from __future__ import annotations

import os
import re
from typing import Any

from spyglass.profile_model.renames import rename_file

# Older IPython names a terminal cell's code after its number, without keeping a map.
_INPUT_NAME = re.compile(r"^<ipython-input-(\d+)-[0-9a-f]+>$")


def cell_label(number: int) -> str:
    return f"In [{number}]"


def cell_numbers(shell: Any) -> dict[str, int]:
    """The name of each cell's code run so far and the cell's number."""
    known = getattr(getattr(shell, "compile", None), "_filename_map", None)
    return {str(k): int(v) for k, v in known.items()} if isinstance(known, dict) else {}


def label_of(name: str, numbers: dict[str, int]) -> str | None:
    if name in numbers:
        return cell_label(numbers[name])
    m = _INPUT_NAME.match(name)
    return cell_label(int(m.group(1))) if m else None


def cell_directory(shell: Any) -> str | None:
    """The directory a kernel compiles cells into, when it names them as files there."""
    get_name = getattr(getattr(shell, "compile", None), "get_code_name", None)
    if get_name is None:
        return None
    try:
        name = str(get_name("", "", 0))
    except Exception:  # another front end's compiler: cells named some other way
        return None
    return os.path.dirname(name) if os.path.isabs(name) else None


def relabel_cells(profile: dict[str, Any], numbers: dict[str, int], own: dict[str, str]) -> None:
    """Renames the profile's cell files to their labels: `own` maps names the caller
    compiled to their labels, `numbers` the shell's cells to their numbers. A label that
    two names would share is given to the first only: the other keeps its name."""
    for name in sorted(profile.get("files") or {}):
        label = own.get(name) or label_of(name, numbers)
        if label is not None and label not in profile["files"]:
            rename_file(profile, name, label)
