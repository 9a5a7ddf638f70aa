"""The client's half of profiling a cluster job: what came back from each worker (its
profile, its last snapshot for one that died, or why it was not profiled) made into the
job's one profile, with a per-worker breakdown and the task table. Engine-neutral."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spyglass.cluster.worker_side import decode
from spyglass.runtime.options import ProfileOptions


class Outcomes:
    """What the job's workers left, gathered as the engine brings it back."""

    def __init__(self) -> None:
        self.finished: dict[str, dict[str, Any]] = {}  # by worker: whole profiles
        self.snapshots: dict[str, bytes] = {}  # by worker: the latest snapshot, compressed
        self.notes: dict[str, dict[str, Any]] = {}  # by worker: why it was not profiled

    def snapshot(self, worker: str, payload: bytes) -> None:
        self.snapshots[worker] = payload

    def result(self, worker: str, value: object) -> None:
        """A worker's answer at the end: bytes (its profile), a note, or the exception the
        engine raised for it (spyglass not importable there, for one)."""
        if isinstance(value, bytes):
            self.finished[worker] = decode(value)
        elif isinstance(value, dict) and "not_profiled" in value:
            self.notes[worker] = value
        else:
            reason = (
                f"{type(value).__name__}: {value}" if isinstance(value, BaseException) else value
            )
            self.notes[worker] = {"worker": worker, "not_profiled": str(reason)}

    def profiles(self) -> list[dict[str, Any]]:
        """Every worker's profile: whole, or as its last snapshot for one that left no
        other (died, or was lost to the engine), marked ``recovered``."""
        out = list(self.finished.values())
        for worker, payload in self.snapshots.items():
            if worker in self.finished or worker in self.notes:
                continue
            profile = decode(payload)
            profile["recovered"] = True
            out.append(profile)
        return out


#: What cloudpickle names the file of code it sends by value: the functions of the client's
#: script or notebook (its ``__main__``), which workers cannot import.
DYNAMIC_CODE = "<dynamic-code>"


def name_dynamic_code(profile: dict[str, Any]) -> None:
    """Gives the worker's "<dynamic-code>" the name of the client's script, with its
    source text, when every function the worker ran from it is one of that script's."""
    import __main__

    main_file = getattr(__main__, "__file__", None)
    entry = profile["files"].get(DYNAMIC_CODE)
    if entry is None or not main_file or main_file in profile["files"]:
        return
    names = {f["function"] for f in profile["frames"] if f["file"] == DYNAMIC_CODE}
    for name in names:
        if name.startswith("<"):
            continue  # a comprehension or lambda, named so before 3.11: in its function
        code = getattr(getattr(__main__, name.partition(".")[0], None), "__code__", None)
        if code is None or os.path.abspath(code.co_filename) != os.path.abspath(main_file):
            return  # not (only) the script's: keep the name that says so
    from spyglass.profile_model.renames import rename_file

    path = os.path.abspath(main_file)
    rename_file(profile, DYNAMIC_CODE, path)
    import linecache

    for line in entry["lines"]:
        line["source"] = line.get("source") or linecache.getline(path, line["lineno"]).rstrip()


def _label(profile: dict[str, Any]) -> str:
    return f"{profile.get('host') or '?'}/{profile.get('worker') or profile.get('pid')}"


def combine(
    outcomes: Outcomes, runners: Sequence[tuple[str, str]], *, program: str
) -> tuple[dict[str, Any] | None, dict[str, dict[str, Any]]]:
    """The job's profile (None when no worker left one), and each worker's own by its
    label in the job's breakdown ("host/worker")."""
    from spyglass.profile_model.merging import distinct_labels, merge_profiles
    from spyglass.profile_model.task_types import task_rows
    from spyglass.runtime.fragments import process_entry, unprofiled_entry

    profiles = sorted(outcomes.profiles(), key=_label)
    if not profiles:
        return None, {}
    for profile in profiles:
        name_dynamic_code(profile)
    labels = distinct_labels([_label(p) for p in profiles])
    tasks = [
        {**row, "pid": p.get("pid")}
        for p, label in zip(profiles, labels)
        for row in task_rows(p, runners, label)
    ]
    merged = merge_profiles(profiles, labels)
    memory = bool(merged.get("memory_profiled"))
    processes = []
    for profile in profiles:
        entry = process_entry(profile)
        entry.update(host=profile.get("host"), worker=profile.get("worker"))
        processes.append(entry)
    for note in outcomes.notes.values():
        entry = unprofiled_entry(note, memory)
        entry.update({k: note[k] for k in ("host", "worker") if note.get(k)})
        processes.append(entry)
    merged.update(program=program, argv=[], exit_status=None, processes=processes, task_types=tasks)
    return merged, dict(zip(labels, profiles))


def worker_options(
    *,
    interval: float,
    program_path: str | list[str] | None,
    profile_all: bool,
    memory: bool,
    memory_window: int | None,
    gpu: bool,
    pseudo_files: Sequence[str] = (),
) -> ProfileOptions:
    """What every worker of the job profiles with, from an engine's ``profile()``
    arguments (spyglass.start()'s). The user's code defaults to the directory of the code
    that called ``profile()`` (the current directory for a notebook or the REPL), which
    the workers must see by the same path."""
    paths = [program_path] if isinstance(program_path, str) else list(program_path or [])
    if not paths:
        filename = sys._getframe(2).f_code.co_filename  # the caller of profile()
        here = Path(filename).resolve().parent
        paths = [os.getcwd() if filename.startswith("<") else str(here)]
    options = ProfileOptions(
        interval_s=interval,
        program_paths=paths,
        profile_all=profile_all,
        pseudo_files=list(pseudo_files),
        memory=memory,
        gpu=gpu,
    )
    if memory_window is not None:
        options.memory_window = int(memory_window)
    return options


def finish(
    outcomes: Outcomes,
    runners: Sequence[tuple[str, str]],
    *,
    engine: str,
    outfile: str | os.PathLike[str] | None,
) -> tuple[dict[str, Any] | None, dict[str, dict[str, Any]]]:
    """The job's profile and each worker's, as combine() makes them, written to `outfile`
    when given; a warning when no worker left one."""
    result, workers = combine(outcomes, runners, program=f"{engine.lower()} job")
    if result is None:
        warn(f"no worker of the {engine} job could be profiled")
    elif outfile is not None:
        write(result, outfile)
    return result, workers


def write(profile: dict[str, Any], outfile: str | os.PathLike[str]) -> None:
    from spyglass.profile_model.io import dump_profile

    dump_profile(profile, Path(outfile))


def warn(message: str) -> None:
    print(f"spyglass: {message}", file=sys.stderr)
