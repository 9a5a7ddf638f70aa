"""Writing an output file (a profile, a report) without harming what is already there.

Every command that writes a file goes through ``write_output``:

- ``-`` is standard output.
- A regular file is replaced whole: the new content goes to a temporary file with an
  unpredictable name, created exclusively (never through a symlink someone planted), in
  the same directory, then renamed over the target. A reader sees the old file or the
  new one, never half of one, and a failed write leaves the old file as it was.
- What is not a regular file (a device such as /dev/null, a FIFO, a socket, the file
  behind /dev/stdout or /dev/fd/N) is written in place: renaming over it would destroy
  the device node or cut the reader off.
- A symlink is followed, as users expect of their own links, except one that another
  user owns in a sticky world-writable directory (/tmp): that is how one local user
  makes another overwrite a file of the victim's choosing, so the link itself is replaced.

The content is complete before anything is opened for writing: a renderer that fails
leaves no file behind and touches no existing one.
"""

from __future__ import annotations

import errno
import os
import stat
import sys

STDOUT = "-"

# /dev/stdout and friends name a descriptor of this process: writing to that descriptor
# keeps what the shell set up (append mode, the offset, a pipe) instead of reopening it.
# (Matched without `re`: every profiled process writes through here on its way out, and
# `re` costs it milliseconds.)
_FD_DIRS = ("/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/")
_STD_NAMES = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def check_writable(path: str, what: str = "the profile") -> str | None:
    """Why `path` cannot be written, or None: checked before any work is done (before the
    program runs, for `spyglass run`). `what` names the file in the message."""
    if path == STDOUT:
        return None
    if not path:
        return f"cannot write {what} to '': give a file name (or - for standard output)"
    if "\0" in path:
        return f"cannot write {what} to {path!r}: a file name cannot hold a NUL character"
    if _descriptor(path) is not None:
        return None
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        return f"cannot write {what} to {path!r}: {(e.strerror or str(e)).lower()}"
    if st is not None and stat.S_ISDIR(st.st_mode):
        return f"cannot write {what} to {path!r}: it is a directory"
    if st is not None and not stat.S_ISREG(st.st_mode):
        if not os.access(path, os.W_OK):
            return f"cannot write {what} to {path!r}: permission denied"
        return None  # a device or a FIFO: written in place
    try:
        planted = _planted(path, os.lstat(path))
    except OSError:
        planted = False
    if planted and os.geteuid() != 0:  # only root may replace another user's link there
        return (
            f"cannot write {what} to {path!r}: it is a symlink another user made in a "
            "shared directory"
        )
    target = _replaced_name(path)
    parent = os.path.dirname(target) or "."
    if not os.path.isdir(parent):
        return f"cannot write {what} to {path!r}: directory {parent!r} does not exist"
    if not os.access(parent, os.W_OK | os.X_OK) or (
        st is not None and not os.access(path, os.W_OK)
    ):
        return f"cannot write {what} to {path!r}: permission denied"
    refused = _refuses_new_files(parent)
    if refused is not None:
        return f"cannot write {what} to {path!r}: {refused}"
    return None


def _refuses_new_files(directory: str) -> str | None:
    """Why no file can be made in `directory`, which access() calls writable (root's view
    of /proc or /sys, some network and FUSE mounts), or None. Found before the program
    runs, not after (the file is written as a new one renamed over the old)."""
    probe = os.path.join(directory, f".spyglass-probe-{os.getpid()}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return None
    except OSError as e:
        return (e.strerror or str(e)).lower()
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass
    return None


def write_output(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Writes `data` (text is written as UTF-8) to `path` as the module doc says. Raises
    OSError (with the path as its filename) when it cannot."""
    name = os.fspath(path)
    # A lone surrogate (from a "\\ud800" in a profile) becomes that escape again: valid JSON.
    raw = data.encode("utf-8", "backslashreplace") if isinstance(data, str) else data
    if name == STDOUT:
        _write_stdout(data)
        return
    if not name:
        raise FileNotFoundError(errno.ENOENT, "no file name given", name)
    fd = _descriptor(name)
    if fd is not None:
        _write_descriptor(fd, raw)
        return
    try:
        st = os.stat(name)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "it is a directory", name)
    if st is not None and not stat.S_ISREG(st.st_mode):
        _write_in_place(name, raw)
        return
    _replace(_replaced_name(name), raw, name)


def _descriptor(path: str) -> int | None:
    if path in _STD_NAMES:
        return _STD_NAMES[path]
    for prefix in (*_FD_DIRS, f"/proc/{os.getpid()}/fd/"):
        number = path[len(prefix) :]
        if path.startswith(prefix) and number.isascii() and number.isdigit():
            return int(number)
    return None


def _write_stdout(data: str | bytes) -> None:
    if isinstance(data, str):
        sys.stdout.write(data)
        sys.stdout.flush()
        return
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        raise OSError(errno.EINVAL, "standard output takes no binary data here", STDOUT)
    buffer.write(data)
    buffer.flush()


def _write_descriptor(fd: int, raw: bytes) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream.fileno() == fd:
                stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    _write_all(fd, raw)


def _write_all(fd: int, raw: bytes) -> None:
    view = memoryview(raw)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _write_in_place(name: str, raw: bytes) -> None:
    """A device, FIFO or socket file: opened as it is (never created, never truncated:
    neither means anything for them)."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as e:
        e.filename = name
        raise
    try:
        _write_all(fd, raw)
    except OSError as e:
        e.filename = name
        raise
    finally:
        os.close(fd)


def _planted(path: str, st: os.stat_result) -> bool:
    """A symlink that another user owns in a sticky world-writable directory."""
    if not stat.S_ISLNK(st.st_mode) or st.st_uid == os.geteuid():
        return False
    try:
        parent = os.stat(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return True
    return bool(parent.st_mode & stat.S_ISVTX and parent.st_mode & stat.S_IWOTH)


def _replaced_name(path: str) -> str:
    """The name the new file is renamed to: `path`, or where a symlink of the user's own
    leads."""
    try:
        st = os.lstat(path)
    except OSError:
        return path
    if not stat.S_ISLNK(st.st_mode) or _planted(path, st):
        return path
    return os.path.realpath(path)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _create_temporary(target: str) -> tuple[int, str]:
    """A new file next to `target`, as mkstemp makes one (without importing tempfile,
    which a profiled process would pay for on its way out): a name nobody can guess,
    created exclusively, so never through a symlink planted under that name, mode 0600."""
    directory = os.path.dirname(target) or "."
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        tmp = os.path.join(directory, f".{os.path.basename(target)}.{os.urandom(8).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", target)


def _replace(target: str, raw: bytes, name: str) -> None:
    try:
        fd, tmp = _create_temporary(target)
    except OSError as e:
        e.filename = name
        raise
    try:
        try:
            os.fchmod(fd, 0o666 & ~_umask())  # what a plain open() would have given
            _write_all(fd, raw)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            e.filename = name
        raise


__all__ = ["STDOUT", "check_writable", "write_output"]
