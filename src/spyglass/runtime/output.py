"""Writing a finished profile and showing the report."""

from __future__ import annotations

import os
import sys

from spyglass import json_text
from spyglass.outfile import STDOUT, check_writable
from spyglass.runtime.options import ProfileOptions
from spyglass.safe_text import dumped_json_is_plain, escape_text

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "check_writable",
    "profile_text",
    "write_and_report",
    "write_html_report",
    "write_snapshot",
    "write_text_atomically",
]


def profile_text(profile: dict[str, Any]) -> str:
    """The text of a profile file: the compact form (profile_model.compact), without spaces
    after separators. ``profile`` itself is left alone."""
    from spyglass.profile_model.compact import compacted

    return json_text.dumps(compacted(profile), compact=True)


def write_text_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Writes `text` to `path` without harming what is there (spyglass.outfile)."""
    from spyglass.outfile import write_output

    write_output(path, text)


def write_and_report(profile: dict[str, Any] | str, options: ProfileOptions) -> None:
    """Writes the profile, shows the report on stderr, then writes the HTML report (and
    opens it) when asked to. Nothing after the JSON can lose the JSON: each failure is one
    line on stderr. ``profile``: the profile, or the text of its file as the native side
    writes it (fragments.finish_run), which is read only for a report."""
    path = options.outfile
    assert path is not None
    text = profile if isinstance(profile, str) else profile_text(profile)
    failure = None
    try:
        write_text_atomically(path, text)
    except OSError as e:
        failure = f"spyglass: error: cannot write the profile to {str(path)!r}: {e.strerror}"
        # Found only once written (a full disk, /dev/full): the run is over, and cannot be
        # run again for its profile.
        # Not for standard output: a reader that stopped early (`| head`) wants no file.
        saved = _save_elsewhere(text, path) if path != STDOUT else None
        if saved is not None:
            failure += f"; it was saved to {saved} instead"
            path = saved
    doc = profile if not isinstance(profile, str) else None
    if doc is None and (options.report or options.html is not None):
        try:
            doc = _report_doc(text, whole=options.html is not None)
        except ValueError as e:  # a fragment damaged from outside, past what was checked
            message = f"spyglass: error: the profile cannot be read for the report: {e}"
            print(message, file=sys.stderr)
    if options.report and doc is not None:
        # Shown even when the JSON could not be written (a full disk, /dev/full): the run's
        # figures are then not lost with it.
        lost = failure is not None and path == options.outfile
        where = "the profile is lost" if lost else f"the profile is in {path}"
        try:
            from spyglass.reporters import get_reporter

            terminal = get_reporter(
                "terminal",
                color=options.color if options.color is not None else sys.stderr.isatty(),
                profile_path=None if path == STDOUT or failure else str(path),
                group_threads=options.group_threads,
                plain_text=dumped_json_is_plain(text),
            )
            terminal.write(doc, sys.stderr)
        except Exception as e:
            print(f"spyglass: error: could not render the report ({e}); {where}", file=sys.stderr)
    if failure is not None:
        print(failure, file=sys.stderr)  # last, where it is seen
        # The HTML page carries the whole profile: still worth writing.
        if options.html is not None and doc is not None:
            write_html_report(doc, options, profile_written=False)
        return
    if options.html is not None and doc is not None:
        write_html_report(doc, options)
    try:
        sys.stderr.flush()
    except Exception:
        pass


def _save_elsewhere(text: str, failed: str) -> str | None:
    """Where the profile went when its own path could not be written: a new file in the
    working directory, else in the temporary directory; None when neither would take it."""
    import tempfile

    name = f"spyglass-profile-{os.getpid()}.json"
    for folder in (os.getcwd(), tempfile.gettempdir()):
        candidate = os.path.join(folder, name)
        if os.path.abspath(candidate) == os.path.abspath(failed):
            continue
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError:
            continue
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(text.encode("utf-8", "backslashreplace"))
        except OSError:
            try:
                os.unlink(candidate)
            except OSError:
                pass
            continue
        return candidate
    return None


def _report_doc(text: str, *, whole: bool) -> dict[str, Any]:
    """The profile file's text decoded for the reports. The stacks and their frames are most
    of a profile's text (600 of 650 KB for sympy): they are decoded only when the terminal
    report draws on them (reporters.terminal.draws_on_stacks), or for the HTML page, which
    shows them all. ValueError when the text cannot be read."""
    from spyglass.profile_model.compact import expanded

    if not whole:
        head = json_text.members_before_last(text, "frame_files")
        if head is not None:
            from spyglass.reporters.terminal import draws_on_stacks

            doc: dict[str, Any] = expanded(head)
            if not draws_on_stacks(doc):
                return doc
    return expanded(json_text.loads(text))


def write_snapshot(profile: dict[str, Any], options: ProfileOptions) -> None:
    """Replaces the profile (and the HTML report, when asked for) with a snapshot of the run
    so far: each file is written whole under a temporary name and renamed over the old one
    (spyglass.outfile), so a reader never sees half of one. Quiet: the terminal report and
    the browser wait for the end of the run. Raises OSError when a file cannot be written."""
    assert options.outfile is not None
    write_text_atomically(options.outfile, profile_text(profile))
    if options.html is not None:
        from spyglass.reporters import get_reporter

        get_reporter(
            "html", profile_path=options.outfile, group_threads=options.group_threads
        ).write(profile, options.html)


def write_html_report(
    profile: dict[str, Any], options: ProfileOptions, *, profile_written: bool = True
) -> bool:
    """Writes the HTML report of `profile` to options.html; says where on stderr
    (with the report), and opens it when options.open_browser. False (after one line on
    stderr) when it could not be written."""
    html_path = options.html
    assert html_path is not None
    try:
        from spyglass.reporters import get_reporter

        written = profile_written and options.outfile != STDOUT
        html = get_reporter(
            "html",
            profile_path=options.outfile if written else None,
            group_threads=options.group_threads,
        )
        html.write(profile, html_path)
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
        print(f"HTML report written to {escape_text(html_path)}", file=sys.stderr)
    if options.open_browser:
        open_in_browser(html_path)
    return True


def open_in_browser(path: str, *, failing: bool = False) -> bool:
    """Opens the file `path` in a web browser; one line on stderr when none starts: an
    error when opening it was the command's job (`failing`: view, diff), a note when it is
    an extra to a run whose status is the program's."""
    import webbrowser
    from pathlib import Path

    try:
        opened = webbrowser.open(Path(path).resolve().as_uri())
    except Exception:  # webbrowser runs whatever BROWSER names: anything can go wrong
        opened = False
    if not opened:
        shown = escape_text(path)
        message = (
            f"spyglass: error: could not start a web browser; the file is {shown}"
            if failing
            else f"spyglass: could not start a web browser; open {shown}"
        )
        print(message, file=sys.stderr)
    return opened
