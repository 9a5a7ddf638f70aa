"""The run's directory, where every process of the run leaves its fragment and journal.

It lives under the temporary directory, named after the spyglass process that owns it:
a run whose spyglass was killed (SIGKILL, a lost terminal) never removes its own, so each
run removes those of runs whose spyglass is gone.
"""

from __future__ import annotations

import os
import stat
import sys

PREFIX = "spyglass-"


def _candidates() -> list[tuple[str, str]]:
    """Where the run's directory may go, each with where it came from: $TMPDIR (made
    absolute, since the program's processes may change directory), then the system's."""
    found = []
    tmpdir = os.environ.get("TMPDIR")
    if tmpdir:
        found.append((os.path.abspath(tmpdir), f"TMPDIR={tmpdir!r}"))
    found += [(d, d) for d in ("/tmp", "/var/tmp", "/dev/shm")]
    return found


def make_run_dir() -> str | None:
    """Creates the run's directory (mode 0700) in the first temporary directory that
    takes it; None, after one line on stderr naming each place tried and why it failed.
    Stale directories beside it are left to remove_stale, which the supervisor calls once
    the program has started."""
    failures = []
    for base, label in _candidates():
        path = os.path.join(base, f"{PREFIX}{os.getpid()}-{os.urandom(4).hex()}")
        try:
            os.mkdir(path, 0o700)
        except OSError as e:
            failures.append(f"{label}: {(e.strerror or str(e)).lower()}")
            continue
        return path
    tried = "; ".join(failures)
    print(f"spyglass: error: cannot create the run's directory ({tried})", file=sys.stderr)
    return None


def _owner_pid(name: str) -> int | None:
    pid, sep, rest = name[len(PREFIX) :].partition("-")
    if not sep or not pid.isdigit() or not rest:
        return None
    return int(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process: alive
    return True


def remove_stale(base: str) -> None:
    """Removes the run directories in `base` that this user's spyglass processes left
    when they were killed: those whose owner process is gone. Another user's, a symlink,
    or one whose process still runs (or whose number was taken by another) is left."""
    uid = os.geteuid()
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        pid = _owner_pid(entry.name)
        if pid is None or pid == os.getpid():
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or _alive(pid):
            continue
        remove_tree(entry.path)


def remove_tree(path: str) -> None:
    """Removes a run's directory and what is in it, as far as it can. Not shutil.rmtree:
    importing shutil (with bz2, lzma and fnmatch) costs 4-5 ms at the end of every run.
    Symbolic links are removed, never followed."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        entries = []
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            pass
    try:
        os.rmdir(path)
    except OSError:
        pass


__all__ = ["PREFIX", "make_run_dir", "remove_stale", "remove_tree"]
