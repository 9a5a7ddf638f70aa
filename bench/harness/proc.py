"""Running one command: wall time, CPU time of the child processes, exit status, output."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

TAIL_CHARS = 2000


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-TAIL_CHARS:].decode("utf-8", "replace")


def run(
    cmd: list[str], env: dict[str, str], cwd: Path, timeout: float, cpus: set[int] | None = None
) -> dict:
    """Run ``cmd`` to completion (or until ``timeout`` seconds) and measure it; with
    ``cpus``, the command and everything it starts run on those CPUs only.

    The child is reaped with a blocking wait4(), so the wall time has the clock's
    resolution (Popen.wait(timeout=...) polls, in steps of up to 50 ms) and the CPU time
    is that of the child and the descendants it reaped. A timer thread kills the child's
    process group on timeout.
    """
    cwd.mkdir(parents=True, exist_ok=True)
    out_path, err_path = cwd / "stdout.txt", cwd / "stderr.txt"
    expired = threading.Event()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                cmd,
                env=env,
                cwd=cwd,
                stdout=out,
                stderr=err,
                start_new_session=True,
                preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
            )
        except OSError as exc:
            return {"rc": None, "ok": False, "reason": f"cannot start: {exc}", "wall_s": None}

        def kill() -> None:
            expired.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        rc = os.waitstatus_to_exitcode(status)
        proc.returncode = rc
        cpu = usage.ru_utime + usage.ru_stime
        timed_out = expired.is_set()
        if timed_out:  # whatever the group left behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    result = {
        "rc": rc,
        "wall_s": wall,
        "cpu_s": cpu,
        # the largest of the child and the descendants it reaped (Linux folds a reaped
        # child's peak into its parent's), in KiB
        "maxrss_kb": usage.ru_maxrss,
        "timed_out": timed_out,
        "stdout": _tail(out_path),
        "stderr": _tail(err_path),
    }
    result["ok"] = rc == 0 and not timed_out
    if timed_out:
        result["reason"] = f"timed out after {timeout:.0f} s"
    elif rc != 0:
        status = f"exit status {rc}"
        if rc < 0:
            try:
                status = f"killed by signal {signal.Signals(-rc).name}"
            except ValueError:
                status = f"killed by signal {-rc}"
        tail = error_summary(result["stderr"] or result["stdout"])
        result["reason"] = f"{status}: {tail}" if tail else status
    return result


ERROR_LINE = re.compile(r"^(Error\b|[\w.]*(Error|Exception)\b:|Fatal Python error)")


def error_summary(text: str) -> str:
    """The last line that looks like an error message, else the last lines."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    errors = [line for line in lines if ERROR_LINE.match(line)]
    return errors[-1][:300] if errors else last_lines(text)


def last_lines(text: str, n: int = 3, width: int = 300) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:])[-width:]


def threads_cpu(text: str) -> dict[str, float] | None:
    """{thread name: CPU seconds} from the ``bench-threads=`` line the workload driver
    writes (workloads/_driver.py); None when there is none."""
    line = marker(text, "bench-threads")
    if line is None:
        return None
    found: dict[str, float] = {}
    for item in filter(None, line.split(",")):
        name, _, ns = item.rpartition(":")
        if name and ns.isdigit():
            found[name] = found.get(name, 0.0) + int(ns) / 1e9
    return found


def marker(text: str, name: str) -> str | None:
    """Value of the last ``name=value`` line in ``text`` (how the workloads report)."""
    value = None
    for line in text.splitlines():
        if line.startswith(name + "="):
            value = line.split("=", 1)[1].strip()
    return value
