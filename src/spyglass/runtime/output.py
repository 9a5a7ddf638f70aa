"""Writing a finished profile and showing the report."""

from __future__ import annotations

import json
import os
import sys

from spyglass.runtime.options import ProfileOptions


def check_writable(path: str) -> str | None:
    """Why `path` cannot be written, or None. Checked before the target runs."""
    parent = os.path.dirname(path) or "."
    if os.path.isdir(path):
        return f"cannot write the profile to {path!r}: it is a directory"
    if not os.path.isdir(parent):
        return f"cannot write the profile to {path!r}: directory {parent!r} does not exist"
    if not os.access(parent, os.W_OK | os.X_OK) or (
        os.path.exists(path) and not os.access(path, os.W_OK)
    ):
        return f"cannot write the profile to {path!r}: permission denied"
    return None


def write_text_atomically(path: str | os.PathLike[str], text: str) -> None:
    path = os.fspath(path)
    tmp = os.path.join(os.path.dirname(path) or ".", f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_and_report(data: str, options: ProfileOptions, *, flush_stdout: bool = True) -> None:
    """Writes the profile, then shows the report on stderr. The target's pending stdout is
    flushed first (so the report comes after it) unless plain python would have lost it."""
    path = options.outfile
    assert path is not None
    try:
        write_text_atomically(path, data)
    except OSError as e:
        print(
            f"spyglass: error: cannot write the profile to {str(path)!r}: {e.strerror}",
            file=sys.stderr,
        )
        return
    if not options.report:
        return
    if flush_stdout:
        try:
            sys.stdout.flush()
        except Exception:
            pass
    try:
        from spyglass.reporters import get_reporter

        color = options.color if options.color is not None else sys.stderr.isatty()
        get_reporter("terminal").render(
            json.loads(data), sys.stderr, color=color, width=None, profile_path=str(path)
        )
    except Exception as e:
        print(
            f"spyglass: error: could not render the report ({e}); the profile is in {path}",
            file=sys.stderr,
        )
