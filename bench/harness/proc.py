"""Running one command: wall time, CPU time of the child processes, exit status, output."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from pathlib import Path

TAIL_CHARS = 2000


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-TAIL_CHARS:].decode("utf-8", "replace")


def run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> dict:
    """Run ``cmd`` to completion (or until ``timeout`` seconds) and measure it.

    The harness runs one command at a time, so the growth of RUSAGE_CHILDREN over the call
    is this command's CPU time (its own descendants included once they are reaped).
    """
    cwd.mkdir(parents=True, exist_ok=True)
    out_path, err_path = cwd / "stdout.txt", cwd / "stderr.txt"
    timed_out = False
    with out_path.open("wb") as out, err_path.open("wb") as err:
        cpu0 = _children_cpu()
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                cmd, env=env, cwd=cwd, stdout=out, stderr=err, start_new_session=True
            )
        except OSError as exc:
            return {"rc": None, "ok": False, "reason": f"cannot start: {exc}", "wall_s": None}
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
        wall = time.perf_counter() - start
        cpu = _children_cpu() - cpu0
    result = {
        "rc": rc,
        "wall_s": wall,
        "cpu_s": cpu,
        "timed_out": timed_out,
        "stdout": _tail(out_path),
        "stderr": _tail(err_path),
    }
    result["ok"] = rc == 0 and not timed_out
    if timed_out:
        result["reason"] = f"timed out after {timeout:.0f} s"
    elif rc != 0:
        result["reason"] = f"exit status {rc}: " + last_lines(result["stderr"] or result["stdout"])
    return result


def last_lines(text: str, n: int = 3, width: int = 300) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:])[-width:]


def marker(text: str, name: str) -> str | None:
    """Value of the last ``name=value`` line in ``text`` (how the workloads report)."""
    value = None
    for line in text.splitlines():
        if line.startswith(name + "="):
            value = line.split("=", 1)[1].strip()
    return value
