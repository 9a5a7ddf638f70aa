"""Merging what the processes of a run left (their fragments, the journals of those that
died first, notes on those that could not be profiled) into the run's one profile."""

from __future__ import annotations

import os
import sys

from spyglass import json_text
from spyglass.profile_model.compact import expanded
from spyglass.profile_model.renames import rename_file

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from typing import Any


def merge_run(
    fragments_dir: str,
    root_pid: int,
    exit_status: int | None,
    program: str,
    sources: dict[str, list[str]] | None = None,
) -> dict[str, Any] | None:
    """The run's profile: the fragments every process of the run left (rebuilt from its
    journal for one that died first) merged into one, with a per-process breakdown, the
    program's first image as the root. None when the program itself left nothing. The
    fragment directory is removed. `sources`: the text of files that are no files (the
    program `spyglass run -` read from stdin), by name."""
    names = _wait_for_stragglers(fragments_dir)
    merged = _merge(fragments_dir, names, root_pid, exit_status, program, sources, live=False)
    from spyglass.runtime.run_dirs import remove_tree

    remove_tree(fragments_dir)
    return merged


def finish_run(
    fragments_dir: str,
    root_pid: int,
    exit_status: int | None,
    program: str,
    sources: dict[str, list[str]] | None = None,
) -> dict[str, Any] | str | None:
    """merge_run's profile; for a run whose only process was the program's, which wrote its
    whole profile, the text of the run's profile file instead: that process's profile with
    the run's own members set (program, exit status, the per-process breakdown), without
    decoding it. For a profile of hundreds of kilobytes that saves the tens of milliseconds
    reading it and writing it again take, at the end of every run."""
    names = _wait_for_stragglers(fragments_dir)
    result: dict[str, Any] | str | None = None
    if sources is None:  # a program read from stdin has its source lines added
        result = _single_process_text(fragments_dir, names, root_pid, exit_status, program)
    if result is None:
        result = _merge(fragments_dir, names, root_pid, exit_status, program, sources, live=False)
    from spyglass.runtime.run_dirs import remove_tree

    remove_tree(fragments_dir)
    return result


def _single_process_text(
    fragments_dir: str, names: set[str], root_pid: int, exit_status: int | None, program: str
) -> str | None:
    """finish_run's text of a run of one process; None for any other run."""
    ours = ("process-", "unprofiled-")
    stems = {name.rsplit(".", 1)[0] for name in names if name.startswith(ours)}
    if len(stems) != 1:
        return None
    stem = stems.pop()
    if not stem.startswith(f"process-{root_pid}-") or stem + ".json" not in names:
        return None
    try:
        with open(os.path.join(fragments_dir, stem + ".json"), "rb") as f:
            text = f.read().decode("utf-8")
        # The members a process row is made of, and those the run sets, come before the
        # threads (core/profile_model.cpp writes them first); the rest is left unread.
        own, spans, _ = json_text.leading_members(text, "threads")
    except (OSError, ValueError):
        return None  # merge_run says what is wrong with it
    end = len(text.rstrip())
    if "processes" in own or not {"program", "exit_status"} <= spans.keys():
        return None
    if not text.endswith("]}", 0, end):  # the end of its last member, the stack table
        return None
    own["exit_status"] = exit_status
    own["program"] = program  # as the command line named it: its process row says "-m" else
    processes = json_text.dumps([process_entry(own)], compact=True)
    pieces: list[str] = []
    at = 0
    for key in sorted(("program", "exit_status"), key=lambda k: spans[k][0]):
        start, stop = spans[key]
        pieces += [text[at:start], json_text.dumps(own[key])]
        at = stop
    # Before the stack table (frame_files, frames, stacks), so that a reader wanting the
    # rest stops there (output._report_doc); at the end when there is none.
    table = text.rfind('"frame_files":', at, end)
    if table >= 0:
        pieces += [text[at:table], '"processes":', processes, ",", text[table:end]]
    else:
        pieces += [text[at : end - 1], ',"processes":', processes, "}"]  # for the closing "}"
    return "".join(pieces)


def snapshot_run(
    fragments_dir: str, root_pid: int, program: str, sources: dict[str, list[str]] | None = None
) -> dict[str, Any] | None:
    """The run's profile so far, while the program still runs (`run --snapshot-every`):
    the processes that have ended as merge_run takes them, the others as their journals
    stand (up to their last complete sampling interval). Marked ``snapshot``; the fragment
    directory is left as it is. None when the program has nothing to show yet."""
    try:
        names = set(os.listdir(fragments_dir))
    except OSError:
        return None
    merged = _merge(fragments_dir, names, root_pid, None, program, sources, live=True)
    if merged is not None:
        merged["snapshot"] = True
    return merged


def _merge(
    fragments_dir: str,
    names: set[str],
    root_pid: int,
    exit_status: int | None,
    program: str,
    sources: dict[str, list[str]] | None,
    *,
    live: bool,
) -> dict[str, Any] | None:
    fragments = []
    unprofiled = []
    for name in sorted(names):
        if name.startswith("unprofiled-"):
            note = _read_json(os.path.join(fragments_dir, name))
            if note is not None:
                unprofiled.append(note)
            continue
        if not name.startswith("process-"):
            continue
        path = os.path.join(fragments_dir, name)
        if name.endswith(".json"):
            fragment = _read_fragment(path)
        elif name.endswith(".journal") and name[: -len(".journal")] + ".json" not in names:
            # A process still running (live), or one that died before it could write one.
            fragment = _recover(path, live=live)
        else:
            continue
        if fragment is not None:
            stem = name.rsplit(".", 1)[0]
            if fragment.get("exit_status") is None and stem + ".status" in names:
                fragment["exit_status"] = _read_status(os.path.join(fragments_dir, stem))
            fragments.append(with_sources(fragment, sources))
    # The program's own process, in the order its images ran (an exec keeps the pid).
    own = sorted(
        (f for f in fragments if f.get("pid") == root_pid),
        key=lambda f: float(f.get("started_at") or 0.0),
    )
    if not own:
        return None
    root = own[0]
    others = [f for f in fragments if f is not root]
    _name_code_strings(root, others)
    root["exit_status"] = exit_status
    root["program"] = program  # as the command line named it: its process row says "-m" else
    merged = with_children(root, others, unprofiled)
    # The run lasted until its last image ended: after an exec it goes on in the same
    # process (its first image's 0.8 s was the run's elapsed time, of 1.4 s).
    if len(own) > 1:
        start = float(root.get("started_at") or 0.0)
        ends = [float(f.get("started_at") or 0.0) + float(f.get("elapsed_s") or 0.0) for f in own]
        merged["elapsed_s"] = max(float(root.get("elapsed_s") or 0.0), max(ends) - start)
    return merged


CODE_FILE = "<string>"  # what Python names the code of `python -c`


def _name_code_strings(root: dict[str, Any], others: list[dict[str, Any]]) -> None:
    """Processes started with different `-c` code all name it "<string>": each distinct
    code keeps a file of its own ("<string> (pid N)", after the first process that ran
    it), while processes running the same code share one."""
    seen: list[tuple[str, dict[int, str]]] = []
    for fragment in [root, *others]:
        entry = (fragment.get("files") or {}).get(CODE_FILE)
        if entry is None:
            continue
        sources = {int(x["lineno"]): str(x.get("source") or "") for x in entry.get("lines") or []}
        same = next((s for s in seen if _same_code(sources, s[1])), None)
        if same is None:
            same = (CODE_FILE if not seen else f"{CODE_FILE} (pid {fragment.get('pid')})", {})
            seen.append(same)
        name, known = same
        known.update(sources)
        if name != CODE_FILE:
            rename_file(fragment, CODE_FILE, name)


def _same_code(lines: dict[int, str], known: dict[int, str]) -> bool:
    """Whether two processes' "<string>" lines are of the same code: the lines both have
    the same source (processes may have run different lines of it)."""
    shared = lines.keys() & known.keys()
    return bool(shared) and all(lines[n] == known[n] for n in shared)


# How long the run waits for processes that outlive the program: multiprocessing's helpers
# leave as soon as the program has (their pipe closes), and their fragment is then whole.
STRAGGLER_WAIT_S = 0.5


def _wait_for_stragglers(fragments_dir: str) -> set[str]:
    """The fragment directory's names, once the processes of the run that were still
    running when the program ended have left (or STRAGGLER_WAIT_S has passed)."""
    import time

    deadline = time.monotonic() + STRAGGLER_WAIT_S
    while True:
        try:
            names = set(os.listdir(fragments_dir))
        except OSError:
            return set()
        # Still running, with or without its fragment written: its exit status comes last.
        pids = {name.split("-")[1] for name in names if name.startswith("process-")}
        running = [pid for pid in pids if _is_running(pid)]
        if not running or time.monotonic() >= deadline:
            return names
        time.sleep(0.01)


def _is_running(pid: str) -> bool:
    try:
        # Bytes: a text file's codec would be one more import at the end of every run.
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0].decode()
    except (OSError, ValueError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie has left, whether or not it was reaped


def _read_status(stem: str) -> int | None:
    """The status a process passed to exit(), which it wrote as it left."""
    try:
        with open(stem + ".status", "rb") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def _read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as f:
            data = json_text.loads(f.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _read_fragment(path: str) -> dict[str, Any] | None:
    fragment = _read_json(path)
    if fragment is None:  # a child killed while writing its profile still has its journal
        return _recover(path[: -len(".json")] + ".journal")
    return expanded(fragment)  # written compact, as the native side writes profiles


def _recover(journal: str, *, live: bool = False) -> dict[str, Any] | None:
    """The profile of a child that died before it wrote one, from its run journal; with
    `live`, of one still running (quietly: its journal may not hold a whole interval yet)."""
    import spyglass._native as _native

    try:
        fragment: dict[str, Any] = expanded(json_text.loads(_native.recover_journal(journal)))
    except (OSError, RuntimeError, ValueError) as e:
        # It may have finished meanwhile: its fragment replaces the journal.
        finished = _read_json(journal[: -len(".journal")] + ".json")
        if finished is not None:
            return expanded(finished)
        if live:
            return None
        pid = os.path.basename(journal).split("-")[1]
        from spyglass.safe_text import escape_text

        reason = escape_text(str(e))
        print(f"spyglass: warning: process {pid} left no usable profile: {reason}", file=sys.stderr)
        return None
    if not live:
        fragment["recovered"] = True
    return fragment


def with_sources(
    fragment: dict[str, Any], sources: dict[str, list[str]] | None = None
) -> dict[str, Any]:
    """A profile recovered from the journal of a child killed before it could finish has
    no source text: its lines get it here, from the files (a whole profile has it), or from
    `sources` for what is no file (a program read from stdin)."""
    for path, stats in (fragment.get("files") or {}).items():
        text: list[str] | None = (sources or {}).get(path)
        for line in stats.get("lines") or []:
            lineno = line.get("lineno")
            if line.get("source") or not isinstance(lineno, int):
                continue
            if text is None:
                from spyglass.runtime.source_lines import read_lines

                text = read_lines(path)
            line["source"] = text[lineno - 1] if 0 < lineno <= len(text) else ""
    return fragment


def process_entry(profile: dict[str, Any]) -> dict[str, Any]:
    """One process's line in the per-process breakdown."""
    from spyglass.profile_model.process_keys import ENTRY_KEYS, FIGURE_KEYS, PROCESS_KEYS

    entry = {k: profile.get(k, 0 if k in FIGURE_KEYS else None) for k in ENTRY_KEYS}
    if profile.get("recovered"):
        entry["recovered"] = True  # died without writing a profile: rebuilt from its journal
    for key in ("role", "ended"):  # a helper of Python's own; an end that is no failure
        if profile.get(key):
            entry[key] = str(profile[key])
    if profile.get("memory_profiled"):
        entry.update({k: profile.get(k, 0.0) for k in PROCESS_KEYS})
    return entry


def unprofiled_entry(note: dict[str, Any], memory: bool) -> dict[str, Any]:
    """A Python process of the run that could not be profiled (another Python version
    without spyglass): listed with the reason, and no figures."""
    entry = process_entry({"memory_profiled": memory})
    for key in ("pid", "program", "argv", "python_version"):
        entry[key] = note.get(key)
    entry["not_profiled"] = str(note.get("not_profiled") or "unknown reason")
    return entry


def with_children(
    root: dict[str, Any],
    fragments: list[dict[str, Any]],
    unprofiled: list[dict[str, Any]],
) -> dict[str, Any]:
    memory = bool(root.get("memory_profiled"))
    processes = [process_entry(root)] + [process_entry(f) for f in fragments]
    processes += [unprofiled_entry(n, memory) for n in unprofiled]
    merged = root
    if fragments:  # the merging machinery costs start-up: a run of one process skips it
        from spyglass.profile_model.merging import merge_profiles

        merged = merge_profiles([root, *fragments], written_here=True)
    for key in ("program", "argv", "exit_status", "elapsed_s", "started_at", "pid"):
        merged[key] = root.get(key)  # the run is the root's: children add their work only
    merged["processes"] = processes
    return merged
