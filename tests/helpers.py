"""Helpers for the test suite (its fixtures are in conftest.py, which uses these).

The integration tier (tests/integration) runs the programs in tests/programs under
``python -m spyglass run`` in a subprocess, with ``sys.executable`` so that it tests whatever
interpreter pytest runs on. Every profile a helper reads is validated against the JSON Schema
(src/spyglass/schema/profile-v3.schema.json); an invalid profile fails the test.

Figures are looked up by source text, not line number, so that editing a test program does not
break its test: ``line_figures(profile, path, "# marker")`` finds the one line of ``path``
containing the text and returns that line's entry of the profile.

Test modules import it as ``helpers``: pytest puts tests/ (which is no package) on sys.path.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Union

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
PROGRAMS_DIR = TESTS_DIR / "programs"
FIXTURES_DIR = TESTS_DIR / "fixtures"
SCHEMA_FILE = REPO_ROOT / "src" / "spyglass" / "schema" / "profile-v3.schema.json"

TIME_KEYS = ("cpu_python_s", "cpu_native_s", "cpu_system_s", "wait_s")

# Generous: the machines these tests run on are small and busy.
RUN_TIMEOUT_S = 120

Profile = dict[str, Any]
Figures = dict[str, Any]
StrPath = Union[str, "os.PathLike[str]"]
ProgramRun = tuple["subprocess.CompletedProcess[str]", Profile]  # a finished run and its profile


# --------------------------------------------------------------------------- schema


def _load_schema() -> dict[str, Any]:
    try:
        from spyglass.schema import load_schema
    except ImportError:
        with open(SCHEMA_FILE, encoding="utf-8") as fh:
            schema: dict[str, Any] = json.load(fh)
        return schema
    return load_schema()


_validator: Any = None


def schema_errors(profile: Any) -> list[str]:
    """Every way `profile` breaks the profile JSON Schema, one line each (empty: valid)."""
    global _validator
    if _validator is None:
        import jsonschema

        schema = _load_schema()
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _validator = cls(schema)
    errors = sorted(_validator.iter_errors(profile), key=lambda e: list(map(str, e.path)))
    return ["/".join(map(str, e.absolute_path)) + ": " + e.message for e in errors]


def assert_valid_profile(profile: Any, where: str = "profile") -> None:
    problems = schema_errors(profile)
    if problems:
        shown = "\n  ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        pytest.fail(f"{where} does not match the profile schema:\n  {shown}{more}", pytrace=False)


# Schema 3 leaves the figures of thread and stack rows that are 0 out of the file: a
# reader takes an absent one as 0 (docs/profile-format.md), and so do the tests.
_ROW_FIGURES = ("cpu_python_s", "cpu_native_s", "cpu_system_s", "cpu_gc_s", "wait_s")
_ROW_FIGURES += ("await_s", "samples")
_ROW_MEMORY_FIGURES = ("mem_alloc_mb", "copy_mb")


def with_zeros(profile: Profile) -> Profile:
    """``profile`` (changed in place) with the figures its thread and stack rows left out."""
    names = _ROW_FIGURES + (_ROW_MEMORY_FIGURES if profile.get("memory_profiled") else ())
    for row in [*profile.get("threads", []), *profile.get("stacks", [])]:
        for name in names:
            row.setdefault(name, 0)
    return profile


def with_frame_files(profile: Profile) -> Profile:
    """``profile`` (changed in place) with its frames naming their files, where a file
    spyglass wrote names them by index in ``frame_files``."""
    files = profile.pop("frame_files", None)
    if files is not None:
        for frame in profile["frames"]:
            frame["file"] = files[frame["file"]]
    return profile


def load_profile(path: StrPath) -> Profile:
    """Reads a profile written by spyglass and fails the test unless it matches the schema;
    its thread and stack rows come with every figure (those left out as 0 put back), its
    frames with their files' names."""
    with open(path, encoding="utf-8") as fh:
        profile: Profile = json.load(fh)
    assert_valid_profile(profile, where=str(path))
    return with_frame_files(with_zeros(profile))


# --------------------------------------------------------------------------- spin_ext


def build_ext(name: str, dest: Path) -> Path:
    """Compiles tests/ext/<name>.c, an extension module, for the running interpreter into
    `dest`."""
    cc = sysconfig.get_config_var("CC") or ""
    cc_argv = shlex.split(cc) if cc and shutil.which(shlex.split(cc)[0]) else []
    if not cc_argv:
        found = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if found is None:
            pytest.fail(f"no C compiler found to build tests/ext/{name}.c", pytrace=False)
        cc_argv = [found]
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = dest / f"{name}{suffix}"
    include = sysconfig.get_paths()["include"]
    cmd = [*cc_argv, "-O2", "-shared", "-fPIC", f"-I{include}"]
    cmd += [str(TESTS_DIR / "ext" / f"{name}.c"), "-o", str(target)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if done.returncode != 0:
        pytest.fail(
            f"building {name} failed ({shlex.join(cmd)}):\n{done.stdout}{done.stderr}",
            pytrace=False,
        )
    return dest


def build_spin_ext(dest: Path) -> Path:
    """Compiles tests/ext/spin_ext.c for the running interpreter into `dest`."""
    return build_ext("spin_ext", dest)


# --------------------------------------------------------------------------- alloc_storm

ALLOC_STORM_SOURCE = TESTS_DIR / "ext" / "alloc_storm.c"
# What the library must import through its PLT for spyglass's hooks to see every call.
ALLOC_STORM_IMPORTS = (
    "malloc",
    "calloc",
    "realloc",
    "free",
    "posix_memalign",
    "aligned_alloc",
    "memalign",
    "valloc",
    "memcpy",
    "memmove",
)


def c_compiler_argv(what: str) -> list[str]:
    """The interpreter's C compiler (sysconfig CC) if it exists here, else cc/gcc/clang."""
    cc = sysconfig.get_config_var("CC") or ""
    if cc and shutil.which(shlex.split(cc)[0]):
        return shlex.split(cc)
    found = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if found is None:
        pytest.fail(f"no C compiler found to build {what}", pytrace=False)
    return [found]


def build_alloc_storm(dest: Path) -> Path:
    """Compiles tests/ext/alloc_storm.c into the shared library `dest`/liballoc_storm.so
    (loaded with ctypes) and returns its path. No builtins, no loop-to-memcpy rewriting and
    no _FORTIFY_SOURCE: every malloc/memcpy must be a call through the library's PLT."""
    target = dest / "liballoc_storm.so"
    cmd = [*c_compiler_argv("tests/ext/alloc_storm.c"), "-O1", "-g0", "-fno-builtin"]
    cmd += ["-fno-tree-loop-distribute-patterns", "-U_FORTIFY_SOURCE", "-D_FORTIFY_SOURCE=0"]
    cmd += ["-shared", "-fPIC", str(ALLOC_STORM_SOURCE), "-o", str(target), "-lpthread"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if done.returncode != 0:
        pytest.fail(
            f"building alloc_storm failed ({shlex.join(cmd)}):\n{done.stdout}{done.stderr}",
            pytrace=False,
        )
    nm = shutil.which("nm")
    if nm is not None:  # the compiler kept every call a call (checked where nm exists)
        listed = subprocess.run(
            [nm, "-D", "--undefined-only", str(target)],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
        names = {line.split()[-1].split("@")[0] for line in listed.stdout.splitlines() if line}
        missing = [name for name in ALLOC_STORM_IMPORTS if name not in names]
        checked = [name for name in names if name.startswith("__") and name.endswith("_chk")]
        if listed.returncode == 0 and (missing or checked):
            pytest.fail(
                f"liballoc_storm.so does not call {missing} through its PLT, or calls the "
                f"fortified {checked}; imports: {sorted(names)}",
                pytrace=False,
            )
    return target


# --------------------------------------------------------------------------- running


def launcher() -> Path | None:
    """The `spyglass` command installed beside this interpreter, if it is the native
    launcher (src/native/launcher): None when spyglass runs from the source tree. Where
    SPYGLASS_REQUIRE_LAUNCHER is set (scripts/test-all, which installs the package), its
    absence fails the test."""
    path = Path(sys.executable).parent / "spyglass"
    try:
        with path.open("rb") as f:
            if f.read(4) == b"\x7fELF":
                return path
    except OSError:
        pass
    if os.environ.get("SPYGLASS_REQUIRE_LAUNCHER"):
        pytest.fail(f"no native spyglass launcher at {path}", pytrace=False)
    return None


class Runner:
    """Runs programs under `spyglass run` and under plain python. `spyglass` is the
    installed command (the native launcher) where there is one, as users run it, and
    `python -m spyglass` from the source tree; a test may set `command` itself."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.workdir = workdir
        self.env = env
        self._counter = itertools.count(1)
        installed = launcher()
        self.command = [str(installed)] if installed else [sys.executable, "-m", "spyglass"]

    def new_path(self, stem: str, suffix: str = ".json") -> Path:
        return self.workdir / f"{stem}-{next(self._counter)}{suffix}"

    def _run(
        self,
        cmd: list[str],
        *,
        cwd: StrPath | None,
        text: bool,
        timeout: float,
        env: dict[str, str] | None,
    ) -> subprocess.CompletedProcess[Any]:
        try:
            return subprocess.run(
                cmd,
                cwd=str(cwd or self.workdir),
                env=env or self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=text,
                encoding="utf-8" if text else None,
                errors="replace" if text else None,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"timed out after {timeout} s: {shlex.join(cmd)}", pytrace=False)
            raise AssertionError from e  # unreachable; keeps type checkers quiet

    def spyglass(
        self,
        target: Sequence[StrPath],
        *,
        options: Sequence[str] = (),
        outfile: Path | None = None,
        report: bool = False,
        expect_profile: bool = True,
        cwd: StrPath | None = None,
        text: bool = True,
        timeout: float = RUN_TIMEOUT_S,
        env: dict[str, str] | None = None,
    ) -> tuple[subprocess.CompletedProcess[Any], Profile | None]:
        """`spyglass run [options] -o OUTFILE TARGET...`.

        `target` is what follows the options: a script and its arguments, or "-m"/"-c" and
        theirs. Returns the finished process and the profile it wrote, validated against the
        schema (None when no profile was expected). With expect_profile, a missing profile
        fails the test."""
        outfile = outfile or self.new_path("profile")
        cmd = [*self.command, "run", "-o", str(outfile)]
        if not report:
            cmd.append("--no-report")
        cmd += [*options, *map(str, target)]
        proc = self._run(cmd, cwd=cwd, text=text, timeout=timeout, env=env)
        if not expect_profile:
            return proc, None
        if not outfile.exists():
            stderr = proc.stderr if text else proc.stderr.decode("utf-8", "replace")
            pytest.fail(
                f"spyglass wrote no profile (exit status {proc.returncode}) for "
                f"{shlex.join(cmd)}\nstderr:\n{stderr}",
                pytrace=False,
            )
        return proc, load_profile(outfile)

    def python(
        self,
        target: Sequence[StrPath],
        *,
        cwd: StrPath | None = None,
        text: bool = True,
        timeout: float = RUN_TIMEOUT_S,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[Any]:
        """Plain `python TARGET...`, for comparison."""
        cmd = [sys.executable, *map(str, target)]
        return self._run(cmd, cwd=cwd, text=text, timeout=timeout, env=env)

    def spyglass_cli(
        self,
        args: Sequence[StrPath],
        *,
        cwd: StrPath | None = None,
        timeout: float = RUN_TIMEOUT_S,
    ) -> subprocess.CompletedProcess[str]:
        """`spyglass ARGS...` as given (no options added), text output."""
        cmd = [*self.command, *map(str, args)]
        return self._run(cmd, cwd=cwd, text=True, timeout=timeout, env=None)


def stdout_json(proc: subprocess.CompletedProcess[str]) -> Any:
    """The JSON document a test program printed last on stdout (alone on its line(s))."""
    text = proc.stdout.strip()
    start = text.rfind("\n{")
    try:
        return json.loads(text[start + 1 :] if start >= 0 else text)
    except ValueError:
        pytest.fail(f"the program printed no JSON at the end of stdout:\n{text}", pytrace=False)


def program(name: str) -> Path:
    """The absolute path of a test program in tests/programs."""
    path = PROGRAMS_DIR / name
    assert path.is_file(), f"no test program {path}"
    return path


# --------------------------------------------------------------------------- figures


def cpu(figures: Figures) -> float:
    """CPU time of a times object: Python + native + system."""
    return float(figures["cpu_python_s"] + figures["cpu_native_s"] + figures["cpu_system_s"])


def zero_figures(**extra: Any) -> Figures:
    return {**{k: 0.0 for k in TIME_KEYS}, "samples": 0, **extra}


def file_entry(profile: Profile, path: StrPath) -> Figures:
    """The profile's entry for the file at `path` (keys are absolute paths)."""
    files = profile["files"]
    for candidate in (str(path), os.path.abspath(path), os.path.realpath(path)):
        if candidate in files:
            entry: Figures = files[candidate]
            return entry
    pytest.fail(f"{path} is not in the profile; files: {sorted(files)}", pytrace=False)
    raise AssertionError  # unreachable


def source_lineno(path: StrPath, text: str) -> int:
    """The line number of the one line of `path` that contains `text`."""
    with open(path, encoding="utf-8") as fh:
        hits = [n for n, line in enumerate(fh, start=1) if text in line]
    if len(hits) != 1:
        pytest.fail(f"{text!r} is on {len(hits)} lines of {path}, expected 1", pytrace=False)
    return hits[0]


def line_figures(profile: Profile, path: StrPath, text: str) -> Figures:
    """The profile's figures for the line of `path` containing `text`. A line the profile does
    not list had no samples and no wait: it comes back as zeros."""
    figures = figures_at(profile, path, source_lineno(path, text))
    if figures["source"] is not None:
        assert text in figures["source"], (
            f"the profile's source of {path}:{figures['lineno']} is {figures['source']!r}, "
            f"which does not contain {text!r}"
        )
    return figures


def figures_at(profile: Profile, path: StrPath, lineno: int) -> Figures:
    """The profile's figures for line `lineno` of `path` (zeros if it is not listed)."""
    for entry in file_entry(profile, path)["lines"]:
        if entry["lineno"] == lineno:
            return dict(entry)
    return zero_figures(lineno=lineno, source=None)


def _names_match(recorded: str, wanted: str) -> bool:
    if recorded == wanted:
        return True
    # 3.9/3.10 record plain names where 3.11+ record qualified ones.
    return sys.version_info < (3, 11) and recorded == wanted.rsplit(".", 1)[-1]


def function_figures(
    profile: Profile, name: str, path: StrPath | None = None, *, required: bool = True
) -> Figures:
    """The figures of the function called `name` (qualified name on 3.11+), in file `path` or
    in any file. Absent and not required: zeros."""
    files = [file_entry(profile, path)] if path is not None else list(profile["files"].values())
    found = [f for entry in files for f in entry["functions"] if _names_match(f["name"], name)]
    if len(found) > 1:
        pytest.fail(f"{len(found)} functions called {name!r} in the profile", pytrace=False)
    if found:
        return dict(found[0])
    if required:
        names = sorted(f["name"] for entry in files for f in entry["functions"])
        pytest.fail(f"no function {name!r} in the profile; functions: {names}", pytrace=False)
    return zero_figures(name=name)


def total_cpu(profile: Profile) -> float:
    """All CPU time of the profiled process, attributed or not."""
    return cpu(profile)


def describe(figures: Figures) -> str:
    """One line for assertion messages."""
    return (
        f"python {figures['cpu_python_s']:.3f}s native {figures['cpu_native_s']:.3f}s "
        f"system {figures['cpu_system_s']:.3f}s wait {figures['wait_s']:.3f}s "
        f"samples {figures['samples']}"
    )


# --------------------------------------------------------------------------- left behind


def process_state() -> dict[str, object]:
    """What a test must leave as it found it in the test process: the standard library's
    functions spyglass patches for a profiled run (runtime/stdlib_patches; threading's
    patch is left out, as a session installs it for good) and the SIGTERM handler."""
    import signal

    return {
        "os._exit": os._exit,
        "os.execv": os.execv,
        "os.execve": os.execve,
        "the SIGTERM handler": signal.getsignal(signal.SIGTERM),
    }


def left_behind(before: dict[str, object]) -> list[str]:
    """What a test left behind since ``before`` (process_state()): a profiler still
    running (stopped here, so that the next test starts clean) or a patch still in place."""
    from spyglass import api
    from spyglass.runtime.session import running_sessions

    problems = []
    if api.is_profiling():
        api.stop_to_json(program="left running", argv=[])
        problems.append("left spyglass profiling (start() without stop())")
    if running_sessions():
        problems.append(f"left {running_sessions()} profiling session(s) running")
    after = process_state()
    changed = [name for name in before if after[name] != before[name]]
    if changed:
        problems.append(f"left {', '.join(changed)} changed")
    return problems


def sigint_default() -> None:
    """For Popen's preexec_fn: SIGINT at its default, as a terminal's foreground job has
    it. A suite started in the background (`&` in a script) ignores SIGINT, and every
    process it starts would inherit that, so that no Ctrl-C test could pass."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
