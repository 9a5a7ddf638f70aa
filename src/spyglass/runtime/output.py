"""Writing a finished profile and showing the report."""

from __future__ import annotations

import json
import os
import sys

from spyglass.runtime.options import ProfileOptions


def check_writable(path: str, what: str = "the profile") -> str | None:
    """Why `path` cannot be written, or None. Checked before the target runs; `what` names
    the file in the message."""
    parent = os.path.dirname(path) or "."
    if os.path.isdir(path):
        return f"cannot write {what} to {path!r}: it is a directory"
    if not os.path.isdir(parent):
        return f"cannot write {what} to {path!r}: directory {parent!r} does not exist"
    if not os.access(parent, os.W_OK | os.X_OK) or (
        os.path.exists(path) and not os.access(path, os.W_OK)
    ):
        return f"cannot write {what} to {path!r}: permission denied"
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


def write_and_report(data: str, options: ProfileOptions) -> None:
    """Writes the profile, shows the report on stderr, then writes the HTML report (and
    opens it) when asked to. Nothing after the JSON can lose the JSON: each failure is one
    line on stderr."""
    path = options.outfile
    assert path is not None
    try:
        write_text_atomically(path, data)
    except OSError as e:
        print(
            f"spyglass: error: cannot write the profile to {str(path)!r}: {e.strerror}",
            file=sys.stderr,
        )
        # The HTML page carries the whole profile: still worth writing.
        if options.html is not None:
            write_html_report(data, options, profile_written=False)
        return
    if options.report:
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
    if options.html is not None:
        write_html_report(data, options)
    try:
        sys.stderr.flush()
    except Exception:
        pass


def write_html_report(data: str, options: ProfileOptions, *, profile_written: bool = True) -> bool:
    """Writes the HTML report of the profile `data` to options.html; says where on stderr
    (with the report), and opens it when options.open_browser. False (after one line on
    stderr) when it could not be written."""
    html_path = options.html
    assert html_path is not None
    try:
        import io

        from spyglass.reporters import get_reporter

        page = io.StringIO()
        profile_path = options.outfile if profile_written else None
        get_reporter("html").render(
            json.loads(data), page, color=False, width=None, profile_path=profile_path
        )
        write_text_atomically(html_path, page.getvalue())
    except Exception as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        kept = f"; the profile is in {options.outfile}" if profile_written else ""
        print(
            f"spyglass: error: could not write the HTML report to {html_path!r}: "
            f"{reason or type(e).__name__}{kept}",
            file=sys.stderr,
        )
        return False
    if options.report:
        print(f"HTML report written to {html_path}", file=sys.stderr)
    if options.open_browser:
        open_in_browser(html_path)
    return True


def open_in_browser(path: str) -> bool:
    """Opens the file `path` in a web browser; one line on stderr when none starts."""
    import webbrowser
    from pathlib import Path

    try:
        opened = webbrowser.open(Path(path).resolve().as_uri())
    except Exception:
        opened = False
    if not opened:
        print(f"spyglass: could not start a web browser; open {path}", file=sys.stderr)
    return opened
