"""The bench environment: bench/.venv with the peers and spyglass installed, and a
description of the machine and software a run used."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from . import proc

BENCH_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = BENCH_DIR.parent
VENV_DIR = BENCH_DIR / ".venv"
BUILD_DIR = BENCH_DIR / ".build" / "spyglass"
REQUIREMENTS = BENCH_DIR / "requirements.txt"
STAMP = VENV_DIR / ".bench-requirements.sha256"
SPYGLASS_DIST = "spyglass-profiler"
VERSION_PACKAGES = [
    "scalene",
    "py-spy",
    "pyinstrument",
    "memray",
    "sympy",
    "docutils",
    SPYGLASS_DIST,
]


def log(message: str) -> None:
    stamp = datetime.datetime.now().strftime("%H:%M:%S")
    print(f"[{stamp}] {message}", file=sys.stderr, flush=True)


def venv_python() -> Path:
    return VENV_DIR / "bin" / "python"


def child_env() -> dict[str, str]:
    """Environment for every command the harness runs: the bench venv first on PATH,
    nothing inherited that changes how Python starts, fixed hash seed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "BENCH_"))}
    env.pop("VIRTUAL_ENV", None)
    env["VIRTUAL_ENV"] = str(VENV_DIR)
    env["PATH"] = f"{VENV_DIR / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONHASHSEED"] = "0"
    return env


def _pip(args: list[str], timeout: float = 1800) -> dict:
    cmd = [str(venv_python()), "-m", "pip", "--disable-pip-version-check", *args]
    return proc.run(cmd, child_env(), BENCH_DIR / "results" / "tmp" / "pip", timeout)


def ensure_venv(base_python: str) -> None:
    if venv_python().exists():
        return
    log(f"creating {VENV_DIR} with {base_python}")
    subprocess.run([base_python, "-m", "venv", str(VENV_DIR)], check=True)


def install_peers() -> dict:
    """pip-install requirements.txt unless the venv already has exactly this file's set."""
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text().strip() == digest:
        return {"ok": True, "action": "reused"}
    log("installing peers from requirements.txt (pip)")
    result = _pip(["install", "-r", str(REQUIREMENTS)])
    if not result["ok"]:
        return {"ok": False, "action": "install", "reason": result["reason"]}
    STAMP.write_text(digest + "\n")
    return {"ok": True, "action": "installed"}


def install_spyglass(reinstall: bool) -> dict:
    """(Re)install spyglass from the repository this bench directory belongs to."""
    if reinstall:
        log(f"installing spyglass from {REPO_ROOT} (pip; builds the C++ core)")
        _pip(["uninstall", "-y", SPYGLASS_DIST], timeout=300)
        result = _pip(
            ["install", f"--config-settings=build-dir={BUILD_DIR}", str(REPO_ROOT)], timeout=1800
        )
        if not result["ok"]:
            return {"ok": False, "reason": "pip install failed: " + _pip_error(result)}
    return probe_spyglass()


def _pip_error(result: dict) -> str:
    text = result.get("stderr", "") + "\n" + result.get("stdout", "")
    keep = [
        line.strip()
        for line in text.splitlines()
        if ("error" in line.lower() or "Error" in line) and "WARNING" not in line
    ]
    return proc.last_lines("\n".join(keep) or text, n=4, width=600)


def probe_spyglass() -> dict:
    """Can ``python -m spyglass run`` be started? Does it know about memory profiling?"""
    result = proc.run(
        [str(venv_python()), "-m", "spyglass", "run", "--help"],
        child_env(),
        BENCH_DIR / "results" / "tmp" / "probe",
        120,
    )
    if not result["ok"]:
        return {
            "ok": False,
            "reason": "`python -m spyglass run --help` failed: " + result["reason"],
        }
    help_text = result["stdout"] + result["stderr"]
    return {"ok": True, "has_memory_profiling": "--memory-window" in help_text}


def _venv_info() -> dict:
    code = (
        "import json, sys, importlib.metadata as m\n"
        "v = {}\n"
        f"for name in {VERSION_PACKAGES!r}:\n"
        "    try: v[name] = m.version(name)\n"
        "    except m.PackageNotFoundError: v[name] = None\n"
        "print(json.dumps({'python': sys.version.split()[0], 'implementation':"
        " sys.implementation.name, 'executable': sys.executable, 'versions': v}))\n"
    )
    out = subprocess.run(
        [str(venv_python()), "-c", code], env=child_env(), capture_output=True, text=True
    )
    try:
        return json.loads(out.stdout)
    except ValueError:
        return {"error": out.stderr[-500:]}


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
        )
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _loadavg() -> list[float] | None:
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def _relative_to_repo(path: str | None) -> str | None:
    if not path:
        return path
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        rel = os.path.relpath(path, repo)
    except ValueError:
        return os.path.basename(path)
    return rel if not rel.startswith("..") else os.path.basename(path)


def describe(started: datetime.datetime) -> dict:
    info = _venv_info()
    return {
        "date": started.isoformat(timespec="seconds"),
        "python": info.get("python"),
        # Relative to the repository: results are committed and must not name this machine.
        "python_executable": _relative_to_repo(info.get("executable")),
        "harness_python": sys.version.split()[0],
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "kernel": platform.release(),
        "loadavg_at_start": _loadavg(),
        "versions": info.get("versions", {}),
        "repo_commit": _git_commit(),
    }


def loadavg() -> list[float] | None:
    return _loadavg()
