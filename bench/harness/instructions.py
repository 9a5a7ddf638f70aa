"""Start-up counted in instructions, process by process.

The wall and CPU times of start-up move with whatever else the machine runs (on a shared
two-core machine the same command takes 19 or 29 ms of CPU from one minute to the next).
valgrind's callgrind counts the instructions each process executes instead: for the same
binaries and inputs the count barely moves, so a change of a few percent in what
spyglass's supervisor does at start-up shows as such. Two caveats, both in the table:
under valgrind a program runs some 50 times slower, so its CPU timer (10 ms of CPU) fires
far more often per instruction than it would, and the program's count includes that
extra sampling, and whatever a sample triggers (compiling a library's unwind table the
first time a sample lands in it); the supervisor's count has no such term.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from . import env
from .context import Context
from .overhead import WORKLOAD_DIR

KEYS = ("none", "spyglass-cpu", "spyglass-full")
SCRIPT = "empty"
TIMEOUT_S = 600


def _role(header: str, script: Path) -> str:
    if "spyglass.cli.main" in header:
        return "supervisor"
    return "program" if str(script) in header else "other"


def _read(path: Path, script: Path) -> tuple[str, int] | None:
    """(role, instructions) of one process's callgrind file."""
    header: list[str] = []
    total = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
            elif total is None and len(header) < 64:
                header.append(line)
    if total is None:
        return None
    return _role("".join(header), script), total


def _one(ctx: Context, key: str, script: Path) -> dict:
    p = next(p for p in ctx.profilers if p.key == key)
    with tempfile.TemporaryDirectory(prefix="spyglass-bench-cg-") as tmp:
        out = Path(tmp) / f"profile.{p.ext}" if p.ext else None
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--trace-children=yes",
            f"--callgrind-out-file={tmp}/cg.%p",
            *p.command(ctx.python, ctx.bindir, script, out),
        ]
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, env=env.child_env(), timeout=TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            return {"ok": False, "reason": f"timed out after {TIMEOUT_S} s"}
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-2:]
            return {"ok": False, "reason": " / ".join(tail) or f"exit {done.returncode}"}
        by_role: dict[str, int] = {}
        for f in Path(tmp).glob("cg.*"):
            found = _read(f, script)
            if found is not None:
                by_role[found[0]] = by_role.get(found[0], 0) + found[1]
    return {"ok": bool(by_role), "instructions": by_role, "reason": None if by_role else "none"}


def measure(ctx: Context, reps: int) -> dict:
    """Each of plain python and the spyglass rows on the empty script, `reps` times."""
    if shutil.which("valgrind") is None:
        return {"ok": False, "reason": "valgrind is not installed"}
    script = WORKLOAD_DIR / f"{SCRIPT}.py"
    keys = [p.key for p in ctx.profilers if p.key in KEYS and p.key not in ctx.unavailable]
    runs = []
    for rep in range(reps):
        for key in keys:
            env.log(f"instructions: rep {rep + 1}/{reps} {key}")
            runs.append({"rep": rep, "profiler": key, **_one(ctx, key, script)})
    return {"ok": True, "script": SCRIPT, "repetitions": reps, "runs": runs}


def _median(runs: list[dict], key: str, role: str | None) -> float | None:
    values = [
        sum(r["instructions"].values()) if role is None else r["instructions"].get(role, 0)
        for r in runs
        if r["profiler"] == key and r["ok"]
    ]
    return statistics.median(values) if values else None


def render(raw: dict | None, labels: dict[str, str]) -> list[str]:
    if not raw:
        return []
    head = ["## Start-up in instructions", ""]
    if not raw.get("ok"):
        return [*head, f"not measured: {raw.get('reason')}", ""]
    runs = raw["runs"]
    plain = _median(runs, "none", None)
    lines = [
        *head,
        f"Instructions executed by every process of a run of `{raw['script']}.py` under "
        "valgrind's callgrind (median of "
        f"{raw['repetitions']}): a count, not a time, so it does not move with the "
        "machine's load. The supervisor's count is exact; the program's includes the extra "
        "CPU samples that valgrind's slow-down makes it take (bench/harness/instructions.py).",
        "",
        "| profiler | all processes | added to plain python | supervisor | program |",
        "|---|---|---|---|---|",
    ]

    def m(n: float | None) -> str:
        return "—" if n is None else f"{n / 1e6:.1f} M"

    for key, label in labels.items():
        total = _median(runs, key, None)
        if total is None:
            continue
        added = "" if key == "none" or plain is None else f"+{(total - plain) / 1e6:.1f} M"
        sup = _median(runs, key, "supervisor") if key != "none" else None
        prog = _median(runs, key, "program")
        lines.append(f"| {label} | {m(total)} | {added} | {m(sup)} | {m(prog)} |")
    return [*lines, ""]
