"""The compact form spyglass writes profiles in (schema 3), and back.

A run of hundreds of threads writes thousands of thread and stack rows, most of whose
figures are 0, and a frame table naming the same few files thousands of times. As written,
rows leave out their figures that are 0 (fields.ZERO_LEVELS) and frames name their file by
its index in ``frame_files``: a third smaller. Readers work on the expanded form, where
every frame names its file and every row has the figures its version requires. The program's
own process writes the compact form directly (core/profile_model.cpp); this module compacts
what Python merged, and expands what it reads. It imports nothing but the field table, for
the end of every run."""

from __future__ import annotations

from spyglass.profile_model import fields

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from typing import Any


def compacted(profile: dict[str, Any]) -> dict[str, Any]:
    """``profile`` in the compact form (a shallow copy; ``profile`` itself is left alone)."""
    compact: dict[str, Any] = {}
    for key, value in profile.items():
        if key == "frames" and isinstance(value, list) and "frame_files" not in profile:
            files: dict[str, int] = {}
            frames = [
                {**f, "file": files.setdefault(f["file"], len(files))}
                if isinstance(f, dict) and isinstance(f.get("file"), str)
                else f
                for f in value
            ]
            compact["frame_files"] = list(files)
            compact["frames"] = frames
        elif key in ("threads", "stacks") and isinstance(value, list):
            zeros = frozenset(fields.zero_omitted("thread" if key == "threads" else "stack"))
            compact[key] = [
                {k: v for k, v in row.items() if not (k in zeros and v == 0)}
                if isinstance(row, dict)
                else row
                for row in value
            ]
        else:
            compact[key] = value
    return compact


def expanded(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc``, as spyglass writes it, in the form readers work on: with_zeros, then
    with_frame_files."""
    return with_frame_files(with_zeros(doc))


def with_frame_files(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with its frames naming their files again, where they name them by index in
    ``frame_files`` (as spyglass writes them): a copy without ``frame_files``, its frames
    copied; an index that names no file there is left for the checks to refuse. ``doc`` itself
    when it has no ``frame_files``."""
    files = doc.get("frame_files")
    frames = doc.get("frames")
    if not isinstance(files, list) or not isinstance(frames, list):
        return doc
    out = {k: v for k, v in doc.items() if k != "frame_files"}
    named = [f if isinstance(f, str) else None for f in files]
    out["frames"] = [_named_frame(f, named) for f in frames]
    return out


def _named_frame(frame: object, files: list[str | None]) -> object:
    if not isinstance(frame, dict):
        return frame
    index = frame.get("file")
    # An int, not a bool, that names a file: anything else is left for the checks to refuse.
    if type(index) is not int or not 0 <= index < len(files) or files[index] is None:
        return frame
    return {**frame, "file": files[index]}


def with_zeros(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with the figures version 2 required of its thread and stack rows, which
    version 3 leaves out when 0, put back as 0 (at the start of their rows); rows that lack
    none are shared, and so is ``doc`` when no row lacks any. (Figures older versions could
    lack already, such as ``cpu_gc_s``, are left absent: readers take them as 0.)"""
    wanted = ("required", "memory") if doc.get("memory_profiled") is True else ("required",)
    filled: dict[str, Any] = {}
    for key, level in (("threads", "thread"), ("stacks", "stack")):
        rows = doc.get(key)
        if not isinstance(rows, list):
            continue
        zeros = fields.zero_omitted(level)
        names = [f.name for f in fields.at(level) if f.name in zeros and f.presence in wanted]
        if all(not isinstance(r, dict) or all(n in r for n in names) for r in rows):
            continue
        zero = dict.fromkeys(names, 0)
        filled[key] = [{**zero, **r} if isinstance(r, dict) else r for r in rows]
    return {**doc, **filled} if filled else doc
