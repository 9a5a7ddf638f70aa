"""The half of `spyglass attach` that runs inside the attached process.

The attaching command (cli/attach.py) leaves what it wants in its control directory
(``command.json``) and has the process run its bootstrap (runtime/attach_target.py), which
imports this module and calls ``command()`` from a pending call of the main thread, at a
point where any Python code may run. Each command answers with a file in that directory:
``started``, ``stopped`` or ``failed`` (one line saying why). Nothing here prints: the
program's stdout and stderr are its own.

The profile is journaled into the control directory as it is collected and written there as
a fragment when profiling stops, so that the attaching command merges it as `spyglass run`
merges a process's (runtime/fragments.py), and still has the journal if the process dies
while profiled.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from spyglass.runtime.options import ProfileOptions
from spyglass.runtime.session import Session, running_sessions

# The session this attach started, and the sys.path entry its bootstrap added (removed
# again when profiling stops, so that the program's imports are as before).
_session: Session | None = None
_added_path = ""
_stem = ""
_program = ""


class AttachFailed(Exception):
    """What the attaching command shows as its one line."""


def command(control_dir: str, added_path: str) -> None:
    """Runs what ``command.json`` of `control_dir` asks for; answers in `control_dir`."""
    global _added_path
    if added_path:
        _added_path = added_path
    try:
        with open(os.path.join(control_dir, "command.json"), encoding="utf-8") as f:
            request: dict[str, Any] = json.load(f)
        action = request.get("action")
        if action == "start":
            _start(control_dir, request)
            _answer(control_dir, "started", "")
        elif action == "stop":
            _stop(control_dir)
            _answer(control_dir, "stopped", "")
        else:  # "cancel": the command gave up waiting for the start, and left
            _forget_path()
    except AttachFailed as e:
        _forget_path()
        _answer(control_dir, "failed", str(e))
    except Exception as e:
        _forget_path()
        _answer(control_dir, "failed", f"{type(e).__name__}: {e}")


def _start(control_dir: str, request: dict[str, Any]) -> None:
    global _session, _stem, _program
    if running_sessions():
        raise AttachFailed("the process is already being profiled by spyglass")
    options = ProfileOptions.from_json(request["options"])
    if not options.program_paths:
        options.program_paths = [_program_dir()]
    if not options.pseudo_files:
        from spyglass.api import TYPED_CODE

        options.pseudo_files = list(TYPED_CODE)
    _program = str(request.get("program") or (sys.argv[0] if sys.argv else ""))
    _stem = os.path.join(control_dir, f"process-{os.getpid()}-{os.urandom(4).hex()}")
    session = Session(options)
    session.start(journal_path=_stem + ".journal", program=_program)
    _session = session


def _program_dir() -> str:
    """The directory of the program's main script (the user's code by default), else the
    directory it runs in."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if isinstance(main_file, str) and os.path.exists(main_file):
        return os.path.dirname(os.path.realpath(main_file))
    return os.getcwd()


def _stop(control_dir: str) -> None:
    global _session
    session = _session
    if session is None or not session.running:
        raise AttachFailed("spyglass is not profiling the process (was it attached?)")
    _session = None
    try:
        session.stop()
        text = session.profile_json(
            program=_program,
            argv=list(sys.argv),
            exit_status=None,
            notes={"attached": True},
        )
        from spyglass.outfile import write_output

        write_output(_stem + ".json", text)
        os.unlink(_stem + ".journal")  # the fragment replaces it
    finally:
        _forget_path()


def _forget_path() -> None:
    global _added_path
    if _added_path and _session is None:
        try:
            sys.path.remove(_added_path)
        except ValueError:
            pass
        _added_path = ""


def _answer(control_dir: str, name: str, text: str) -> None:
    path = os.path.join(control_dir, name)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
