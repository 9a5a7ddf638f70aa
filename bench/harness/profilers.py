"""One spec per profiler: how its users run it, what it writes, and which package it is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Profiler:
    key: str
    label: str
    package: str | None  # distribution whose version is recorded
    ext: str | None  # extension of the profile it writes; None: writes nothing
    reports_cpu: bool = True  # False: has no CPU figures (accuracy is n/a)
    spyglass: bool = False
    note: str = ""
    # spyglass only: what the profile's memory_profiled must say (None: not checked)
    memory: bool | None = None

    def command(self, python: Path, bindir: Path, script: Path, out: Path | None) -> list[str]:
        py, s, o = str(python), str(script), str(out)
        if self.key == "none":
            return [py, s]
        if self.key == "spyglass-cpu":
            # The report on, as users run it (the goal for start-up is set with it on).
            return [str(bindir / "spyglass"), "run", "--cpu-only", "-o", o, s]
        if self.key == "spyglass-full":
            return [str(bindir / "spyglass"), "run", "-o", o, s]
        if self.key == "scalene-cpu":
            return [py, "-m", "scalene", "run", "--cpu-only", "-o", o, s]
        if self.key == "scalene-full":
            return [py, "-m", "scalene", "run", "-o", o, s]
        if self.key == "py-spy":
            return [str(bindir / "py-spy"), "record", "-o", o, "-f", "speedscope", "--", py, s]
        if self.key == "pyinstrument":
            return [py, "-m", "pyinstrument", "-o", o, "-r", "json", s]
        if self.key == "cprofile":
            return [py, "-m", "cProfile", "-o", o, s]
        if self.key == "memray":
            return [py, "-m", "memray", "run", "-o", o, s]
        raise KeyError(self.key)


PROFILERS = [
    Profiler("none", "python", None, None, note="plain python, no profiler"),
    Profiler(
        "spyglass-cpu", "spyglass (CPU)", "spyglass-profiler", "json", spyglass=True, memory=False
    ),
    Profiler(
        "spyglass-full",
        "spyglass (full)",
        "spyglass-profiler",
        "json",
        spyglass=True,
        note="CPU + memory + copies (the default)",
        memory=True,
    ),
    Profiler("scalene-cpu", "Scalene (CPU)", "scalene", "json"),
    Profiler("scalene-full", "Scalene (full)", "scalene", "json", note="CPU + memory (default)"),
    Profiler("py-spy", "py-spy", "py-spy", "speedscope.json"),
    Profiler("pyinstrument", "pyinstrument", "pyinstrument", "json"),
    Profiler("cprofile", "cProfile", None, "prof"),
    Profiler("memray", "memray", "memray", "bin", reports_cpu=False),
]
BY_KEY = {p.key: p for p in PROFILERS}


def command_template(p: Profiler) -> str:
    """The command line with placeholders, for the results file and the README."""
    cmd = p.command(Path("python"), Path(""), Path("SCRIPT"), Path("OUT") if p.ext else None)
    return " ".join(cmd)
