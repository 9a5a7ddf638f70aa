"""`spyglass attach PID`: profile a running Python process that was started without
spyglass, for a while or until Ctrl-C, then leave it running as it was.

How spyglass gets into the process is runtime/attach_target.py; what runs there is
runtime/attached.py. This command waits, asks the process to stop profiling, merges what it
left as `spyglass run` merges a process's fragment, and reports."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence

from spyglass._native import DEFAULT_INTERVAL_S
from spyglass.cli.common import EXIT_OK, error, parse
from spyglass.outfile import STDOUT, check_writable
from spyglass.runtime.attach_target import AttachError, Target
from spyglass.runtime.options import ProfileOptions

DEFAULT_ATTACH_OUTFILE = "spyglass-attach.json"
# How long the process's main thread may take to reach a point where Python code may run
# (it runs the pending call there): a thread blocked in one call for longer is not waited on.
ANSWER_TIMEOUT_S = 60.0

DESCRIPTION = """\
Profile a running Python process (CPython 3.9 to 3.13) that was started without
spyglass: for --duration seconds, or until Ctrl-C; then the process goes on running
as it was, and the report and profile are as `spyglass run` writes them. Memory
figures count only what was allocated after spyglass attached.

Needs gdb, and the right to trace the process (the same user, with
kernel.yama.ptrace_scope at 0, or root; in a container, CAP_SYS_PTRACE), and
spyglass installed for the process's Python.

examples:
  spyglass attach 4242 --duration 10
  spyglass attach 4242 --cpu-only --html report.html -o service.json
"""


def build_parser() -> argparse.ArgumentParser:
    from spyglass.cli._args import OneLineParser
    from spyglass.cli.run import _interval

    p = OneLineParser(
        prog="spyglass attach",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("pid", type=int, help="the process to profile")
    p.add_argument(
        "--duration",
        type=float,
        metavar="SECONDS",
        help="how long to profile (default: until Ctrl-C)",
    )
    p.add_argument(
        "-o",
        "--outfile",
        default=DEFAULT_ATTACH_OUTFILE,
        help=f"where to write the JSON profile (default: ./{DEFAULT_ATTACH_OUTFILE})",
    )
    p.add_argument("--html", metavar="FILE", help="write an HTML report to FILE as well")
    p.add_argument(
        "--cpu-only",
        dest="memory",
        action="store_false",
        help="profile CPU time only: no allocation or copy profiling",
    )
    p.add_argument(
        "--interval",
        type=_interval,
        default=DEFAULT_INTERVAL_S,
        metavar="SECONDS",
        help=f"CPU time between samples of each thread (default: {DEFAULT_INTERVAL_S:g})",
    )
    p.add_argument("--no-report", action="store_true", help="no terminal report")
    p.add_argument("--no-color", action="store_true", help="never colour the report")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    ns = parse(build_parser(), argv)
    if isinstance(ns, int):
        return ns
    if ns.duration is not None and not ns.duration > 0:
        return error("--duration must be a positive number of seconds")
    if ns.outfile == STDOUT:
        return error("spyglass attach writes the profile to a file: give -o a file name")
    for path, what in ((ns.outfile, "the profile"), (ns.html, "the HTML report")):
        problem = check_writable(path, what) if path is not None else None
        if problem:
            return error(problem)
    target = Target(ns.pid)
    try:
        target.inspect()
    except AttachError as e:
        return error(e)
    options = ProfileOptions(
        interval_s=ns.interval,
        memory=ns.memory,
        outfile=os.path.abspath(ns.outfile),
        report=not ns.no_report,
        color=False if ns.no_color else None,
        html=os.path.abspath(ns.html) if ns.html else None,
    )
    control_dir = tempfile.mkdtemp(prefix="spyglass-attach-")
    try:
        _share_with(control_dir, ns.pid)
        return _profile(target, options, control_dir, ns.duration)
    finally:
        import shutil

        shutil.rmtree(control_dir, ignore_errors=True)


def _share_with(control_dir: str, pid: int) -> None:
    """The process writes its answers and its profile into the control directory: it must
    own it when it runs as another user than this command (root attaching)."""
    try:
        st = os.stat(f"/proc/{pid}")
        if os.geteuid() == 0 and st.st_uid != 0:
            os.chown(control_dir, st.st_uid, st.st_gid)
    except OSError:
        pass


def _request(control_dir: str, request: Mapping[str, object]) -> None:
    path = os.path.join(control_dir, "command.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(request, f)
    os.replace(path + ".tmp", path)


def _await(control_dir: str, name: str, pid: int) -> str | None:
    """The process's answer: None when it did what was asked (`name` appeared), else why
    not."""
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    while time.monotonic() < deadline:
        if os.path.exists(os.path.join(control_dir, name)):
            return None
        failed = os.path.join(control_dir, "failed")
        if os.path.exists(failed):
            with open(failed, encoding="utf-8", errors="replace") as f:
                os.unlink(failed)
                return f.read().strip() or "it gave no reason"
        if not os.path.exists(f"/proc/{pid}"):
            return f"pid {pid} ended"
        time.sleep(0.02)
    return (
        f"pid {pid}'s main thread ran no Python code for {ANSWER_TIMEOUT_S:g} s (blocked in "
        "one call?)"
    )


def _profile(
    target: Target, options: ProfileOptions, control_dir: str, duration: float | None
) -> int:
    pid = target.pid
    start = {"action": "start", "options": options.to_json(), "program": target.program}
    _request(control_dir, start)
    interrupted = _Interrupts()
    with interrupted:
        try:
            target.inject(control_dir)
        except AttachError as e:
            _request(control_dir, {"action": "cancel"})
            return error(e)
        problem = _await(control_dir, "started", pid)
    if problem is not None:
        _request(control_dir, {"action": "cancel"})  # a start that runs late does nothing
        return error(f"could not start profiling pid {pid}: {problem}")
    until = "" if duration is None else f" for {duration:g} s"
    print(
        f"spyglass: profiling pid {pid}{until} (Ctrl-C to stop); memory figures count only "
        "what is allocated from now on",
        file=sys.stderr,
    )
    ended = _wait(pid, duration, interrupted.seen)
    stopped: str | None = f"pid {pid} ended"
    if not ended:
        _request(control_dir, {"action": "stop"})
        with _Interrupts():
            try:
                target.inject(control_dir)
                stopped = _await(control_dir, "stopped", pid)
            except AttachError as e:
                stopped = str(e)
        if stopped is not None and os.path.exists(f"/proc/{pid}"):
            error(f"could not stop profiling pid {pid} ({stopped}): it profiles on until it ends")
            stopped = "profiling goes on"
    return _report(control_dir, pid, target.program, options, stopped)


def _wait(pid: int, duration: float | None, interrupted_already: bool) -> bool:
    """Waits for the duration or Ctrl-C; True if the process ended meanwhile."""
    deadline = None if duration is None else time.monotonic() + duration
    try:
        while not interrupted_already:
            if not os.path.exists(f"/proc/{pid}") or _is_zombie(pid):
                return True
            left = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
            if left <= 0:
                break
            time.sleep(left)
    except KeyboardInterrupt:
        pass
    return False


def _is_zombie(pid: int) -> bool:
    from spyglass.runtime.attach_target import _is_zombie as zombie

    return zombie(pid)


def _report(
    control_dir: str, pid: int, program: str, options: ProfileOptions, problem: str | None
) -> int:
    from spyglass.runtime.fragments import merge_run
    from spyglass.runtime.output import write_and_report

    try:
        merged = merge_run(control_dir, pid, None, program)
    except Exception as e:
        return error(f"could not read the profile of pid {pid}: {e}")
    if merged is None:
        return error(f"no profile of pid {pid}: {problem or 'it left none'}")
    merged["attached"] = True
    if problem is not None:
        # The journal the process kept while profiled: the profile up to where it stands.
        print(
            f"spyglass: {problem}: the profile is rebuilt from what was collected",
            file=sys.stderr,
        )
    write_and_report(merged, options)
    return EXIT_OK


class _Interrupts:
    """Holds Ctrl-C off while gdb is attached or an answer awaited (interrupting then would
    leave the process half-attached); one that came meanwhile ends the profile as soon as
    it has started."""

    def __init__(self) -> None:
        self.seen = False
        self._previous: object = None

    def _note(self, signum: int, frame: object) -> None:
        self.seen = True

    def __enter__(self) -> _Interrupts:
        self._previous = signal.signal(signal.SIGINT, self._note)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]


__all__ = ["main"]
