"""Reaching into a running Python process for `spyglass attach`: what the process is, which
spyglass can be loaded into it, and the debugger session that loads it.

The mechanism: gdb attaches in batch mode and lets the process run until a thread holding
the GIL enters one of the interpreter's allocator functions or PyEval_SaveThread: points
where the thread is between two calls into the interpreter's API, holds none of its locks
(nor malloc's or the loader's), and may call it. There gdb `dlopen`s spyglass's own
extension (built for that interpreter) and calls its exported ``spyglass_attach_call``,
which queues a pending call and returns at once (src/native/cpython/attach_entry.cpp); gdb
detaches, and the main thread runs the pending call at its next safe point, where the
bootstrap below imports spyglass and does what the control directory asks. Stopping is the
same path with another request. Nothing runs inside the program's signal handlers, nothing
is written to its output, and the process is stopped only while gdb is attached.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

# Functions that a thread enters with the GIL held, from the interpreter's own work: a
# program running Python code calls one of them within microseconds.
SAFE_POINTS = ("PyObject_Malloc", "PyMem_Malloc", "PyObject_Free", "PyEval_SaveThread")
SUPPORTED = ((3, 9), (3, 13))  # the CPython versions spyglass profiles
GDB_TIMEOUT_S = 60.0  # gdb's start on a loaded machine, and the wait for a safe point

BOOTSTRAP = """\
import os, sys
path = {path!r}
added = path not in sys.path
if added:
    sys.path.append(path)  # last: the program's own modules still come first
try:
    from spyglass.runtime import attached
    attached.command(control_dir, path if added else "")
except Exception as e:
    if added and path in sys.path:
        sys.path.remove(path)
    with open(os.path.join(control_dir, "failed"), "w") as f:
        f.write(f"{{type(e).__name__}}: {{e}}")
"""


class AttachError(Exception):
    """One line saying why spyglass cannot attach."""


class Target:
    """A process to attach to, and the spyglass that can be loaded into it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.version = (0, 0)
        self.native_path = ""  # spyglass's extension, built for the process's Python
        self.package_parent = ""  # the directory holding that spyglass package
        self.program = ""

    def inspect(self) -> None:
        """Finds what the process runs and which spyglass fits it; AttachError if none."""
        pid = self.pid
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            raise AttachError(f"no process with pid {pid}") from None
        except PermissionError:
            raise AttachError(
                f"not permitted to attach to pid {pid} (it belongs to another user: run "
                "spyglass attach as that user or as root)"
            ) from None
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [os.fsdecode(a) for a in f.read().split(b"\0") if a]
            with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as f:
                maps = f.read()
        except FileNotFoundError:
            raise AttachError(f"no process with pid {pid}") from None
        except PermissionError:
            raise AttachError(f"not permitted to read pid {pid}'s /proc entries") from None
        if os.path.basename(exe).startswith("spyglass") or _is_zombie(pid):
            raise AttachError(f"pid {pid} is not a running Python process")
        # What it runs: the script, or `-m module` / `-c code` (named as `spyglass run` does).
        what = argv[1:3] if argv[1:2] in (["-m"], ["-c"]) else argv[1:2]
        self.program = " ".join(what) or exe
        self.version = _python_version(pid, exe, maps)
        low, high = SUPPORTED
        shown = ".".join(map(str, self.version))
        if not low <= self.version <= high:
            raise AttachError(
                f"pid {pid} runs Python {shown}, which spyglass does not profile "
                f"(CPython {low[0]}.{low[1]} to {high[0]}.{high[1]})"
            )
        if re.search(r"python3\.\d+t$", exe):
            raise AttachError(
                f"pid {pid} runs a free-threaded Python, which spyglass does not profile"
            )
        self._find_spyglass(exe, argv)

    def _find_spyglass(self, exe: str, argv: list[str]) -> None:
        if self.version == sys.version_info[:2]:
            import spyglass._native as native

            self.native_path = os.path.realpath(native.__file__)
            self.package_parent = os.path.dirname(os.path.dirname(self.native_path))
            return
        # The process's own environment (a virtual environment's python is a link to the
        # interpreter that /proc names as its exe), then the interpreter itself.
        candidates = []
        if argv and "/" in argv[0]:
            candidates.append(os.path.join(f"/proc/{self.pid}/cwd", argv[0]))
        candidates.append(exe)
        probe = (
            "import sys, spyglass._native as n; "
            "print('%d.%d' % sys.version_info[:2]); print(n.__file__)"
        )
        for candidate in candidates:
            try:
                done = subprocess.run(
                    [candidate, "-c", probe], capture_output=True, text=True, timeout=60
                )
            except (OSError, subprocess.TimeoutExpired):
                continue
            lines = done.stdout.split()
            if done.returncode == 0 and lines[:1] == [".".join(map(str, self.version))]:
                self.native_path = os.path.realpath(lines[1])
                self.package_parent = os.path.dirname(os.path.dirname(self.native_path))
                return
        shown = ".".join(map(str, self.version))
        raise AttachError(
            f"spyglass is not installed for the Python {shown} that pid {self.pid} runs "
            f"(install it there: {exe} -m pip install spyglass-profiler)"
        )

    def inject(self, control_dir: str) -> None:
        """Has the process run the bootstrap (which reads `control_dir`) at its next safe
        point; returns once gdb has queued the call and detached."""
        with open(os.path.join(control_dir, "bootstrap.py"), "w", encoding="utf-8") as f:
            f.write(BOOTSTRAP.format(path=self.package_parent))
        gdb = shutil.which("gdb")
        if gdb is None:
            raise AttachError(
                "spyglass attach needs gdb, which is not installed (Debian, Ubuntu: "
                "apt-get install gdb)"
            )
        script = os.path.join(control_dir, "inject.gdb")
        with open(script, "w", encoding="utf-8") as f:
            f.write(_gdb_script(self.native_path, control_dir))
        # -readnever: the symbol tables are enough, and reading debug information would
        # keep the process stopped for longer.
        command = [gdb, "-nx", "-batch", "-readnever", "-iex", "set debuginfod enabled off"]
        command += ["-iex", "set auto-load off", "-p", str(self.pid), "-x", script]
        out = _run_gdb(command)
        if "spyglass-attach: queued 0" in out:
            return
        if "Operation not permitted" in out or "ptrace:" in out:
            raise AttachError(_ptrace_refused(self.pid))
        if "No such process" in out:
            raise AttachError(f"no process with pid {self.pid}")
        if GDB_CANNOT_CALL in out:
            # gdb stops the process, then cannot save and restore its registers around the
            # call (seen with gdb 13 on Linux 6.18 in a VM): it detaches, leaving it as it was.
            raise AttachError(
                f"gdb cannot call into pid {self.pid} on this system ({GDB_CANNOT_CALL}), "
                "so spyglass attach cannot load itself there; spyglass run can profile "
                "the program from its start"
            )
        failure = re.search(r"spyglass-attach: (dlopen failed: .*)", out)
        if failure:
            raise AttachError(f"could not load spyglass into pid {self.pid}: {failure[1]}")
        if "spyglass-attach: no safe point" in out:
            raise AttachError(
                f"pid {self.pid} ran no Python code for {GDB_TIMEOUT_S:g} s (every thread "
                "blocked?): not attached"
            )
        last = [line for line in out.splitlines() if line.strip()][-1:] or ["no output"]
        raise AttachError(f"gdb could not reach into pid {self.pid}: {last[0]}")


# What gdb prints when it cannot write a stopped process's registers back.
GDB_CANNOT_CALL = "Couldn't write extended state status"


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return False


def _python_version(pid: int, exe: str, maps: str) -> tuple[int, int]:
    """The process's Python version: from the libpython it mapped, or from its
    interpreter's name, or by asking that interpreter (only when it is one)."""
    found = re.search(r"libpython(\d+)\.(\d+)", maps) or re.search(
        r"python(\d+)\.(\d+)t?$", os.path.basename(exe)
    )
    if found:
        return int(found[1]), int(found[2])
    if not _exports_python_api(exe):
        raise AttachError(f"pid {pid} is not a Python process ({exe})")
    try:
        done = subprocess.run(
            [exe, "-S", "-c", "import sys; print('%d %d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        major, minor = done.stdout.split()
        return int(major), int(minor)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        raise AttachError(f"pid {pid} is not a Python process spyglass knows ({exe})") from None


def _exports_python_api(exe: str) -> bool:
    """Whether an executable holds the Python API (a statically linked interpreter)."""
    needle = b"Py_AddPendingCall"
    tail = b""
    try:
        with open(exe, "rb") as f:
            while chunk := f.read(1 << 20):
                if needle in tail + chunk:
                    return True
                tail = chunk[-len(needle) :]
    except OSError:
        return False
    return False


def _ptrace_refused(pid: int) -> str:
    hint = "run it as root, or give it the CAP_SYS_PTRACE capability"
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope", encoding="utf-8") as f:
            scope = f.read().strip()
    except OSError:
        scope = ""
    if scope and scope != "0":
        hint = (
            f"kernel.yama.ptrace_scope is {scope}: as root, sysctl kernel.yama.ptrace_scope=0, "
            "or run spyglass attach as root"
        )
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"):
        hint += "; in a container, start it with --cap-add=SYS_PTRACE"
    return f"not permitted to trace pid {pid} ({hint})"


def _gdb_text(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _gdb_script(native_path: str, control_dir: str) -> str:
    lines = ["set pagination off", "set confirm off", "set unwindonsignal on"]
    # Signals go to the program as they would without gdb, without stopping the wait for a
    # safe point (the profiler's own timer signals come hundreds of times a second).
    lines.append("handle all nostop noprint pass")
    lines += ["set breakpoint pending off", "set $spyglass_hit = 0"]
    for name in SAFE_POINTS:
        lines.append(f"break {name}")
    lines += [f"commands 1-{len(SAFE_POINTS)}", "silent", "set $spyglass_hit = 1", "end"]
    lines += [
        "continue",
        "delete breakpoints",
        "if $spyglass_hit == 1",
        f"  set $spyglass_lib = (void*)dlopen({_gdb_text(native_path)}, 2)",
        "  if $spyglass_lib == 0",
        '    printf "spyglass-attach: dlopen failed: %s\\n", (char*)dlerror()',
        "  else",
        '    set $spyglass_call = (void*)dlsym($spyglass_lib, "spyglass_attach_call")',
        "    set $spyglass_queued = "
        f"((int(*)(const char*))$spyglass_call)({_gdb_text(control_dir)})",
        '    printf "spyglass-attach: queued %d\\n", $spyglass_queued',
        "  end",
        "else",
        '  printf "spyglass-attach: no safe point\\n"',
        "end",
        "detach",
        "quit",
    ]
    return "\n".join(lines) + "\n"


def _run_gdb(command: list[str]) -> str:
    """gdb's output. Past the timeout, gdb is interrupted: it stops waiting for a safe
    point, takes its breakpoints out and detaches, leaving the process as it was."""
    import signal

    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,  # the user's Ctrl-C is for spyglass, not for gdb
    )
    try:
        out, _ = proc.communicate(timeout=GDB_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.terminate()
            out, _ = proc.communicate()
        out += "\nspyglass-attach: no safe point\n"
    return out
