"""What every measurement needs: the interpreter, where to write, which profilers can run,
and one function to run a script under one profiler."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from . import env, parsers, proc
from .profilers import Profiler

WORKLOAD_DIR = env.BENCH_DIR / "workloads"
ACCURACY_DIR = env.BENCH_DIR / "accuracy"


@dataclass
class Context:
    python: Path
    bindir: Path
    tmp: Path
    profilers: list[Profiler]
    unavailable: dict[str, str] = field(default_factory=dict)  # key -> reason
    keep_profiles: bool = False
    # whether spyglass profiles' memory_profiled is checked (the installed one has it)
    check_memory: bool = False
    counter: int = 0

    def run(
        self,
        profiler: Profiler,
        script: Path,
        extra_env: dict[str, str] | None,
        timeout: float,
        tag: str,
        cpus: set[int] | None = None,
    ) -> tuple[dict, Path | None]:
        """Run ``script`` under ``profiler``. Returns the record (timings, status, size of
        the profile written) and the path of the profile, or None on failure or when the
        profiler writes none; ``cpus``: the CPUs the run is confined to (None: the harness's).
        The caller removes the profile's directory with ``done``."""
        self.counter += 1
        rundir = self.tmp / f"{self.counter:05d}-{tag}-{profiler.key}"
        out = rundir / f"profile.{profiler.ext}" if profiler.ext else None
        cmd = profiler.command(self.python, self.bindir, script, out)
        child_env = env.child_env()
        child_env.update(extra_env or {})
        res = proc.run(cmd, child_env, rundir, timeout, cpus)
        record = {k: res.get(k) for k in ("wall_s", "cpu_s", "maxrss_kb", "rc", "ok", "reason")}
        if res.get("timed_out"):
            record["timed_out"] = True
        record["stdout"] = res.get("stdout", "")
        record["stderr"] = res.get("stderr", "")
        if res["ok"] and out is not None:
            if not out.exists() or out.stat().st_size == 0:
                record["ok"] = False
                record["reason"] = "wrote no profile: " + proc.last_lines(res["stderr"])
            else:
                record["output_bytes"] = out.stat().st_size
                if profiler.spyglass:
                    memory = profiler.memory if self.check_memory else None
                    invalid = parsers.validate_spyglass(out, memory)
                    if invalid:
                        record["ok"], record["reason"] = False, invalid
        if not record["ok"] or out is None:
            self.done(rundir / "-")
            return record, None
        return record, out

    def done(self, out: Path | None) -> None:
        """Remove the run directory of the profile ``out``."""
        if out is not None and not self.keep_profiles:
            shutil.rmtree(out.parent, ignore_errors=True)

    def clean(self) -> None:
        if not self.keep_profiles:
            shutil.rmtree(self.tmp, ignore_errors=True)
