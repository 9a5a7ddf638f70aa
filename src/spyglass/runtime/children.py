"""Child processes: making every Python process the program starts profile itself, and
merging what they wrote into the root process's profile."""

from __future__ import annotations

import json
import os
import sys

from spyglass.runtime.options import ProfileOptions

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from typing import Any

# Read by bootstrap/sitecustomize.py in every Python process started with our environment
# (spelled there too: it must not import spyglass unless profiling is on).
CHILD_CONFIG_ENV = "SPYGLASS_CHILD_CONFIG"
_BOOTSTRAP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap")
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def prepare_children(options: ProfileOptions) -> str | None:
    """Creates the run's fragment directory and sets the environment that child Python
    processes inherit; returns the directory, or None if it cannot be made."""
    base = os.environ.get("TMPDIR") or "/tmp"
    path = os.path.join(base, f"spyglass-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.mkdir(path, 0o700)
    except OSError:
        return None
    config = {
        "fragments_dir": path,
        "python": list(sys.version_info[:2]),
        "spyglass_version": _native_version(),
        "package_parent": _PACKAGE_PARENT,
        "options": {
            "interval_s": options.interval_s,
            "memory": options.memory,
            "memory_window": options.memory_window,
            "program_paths": options.program_paths,
            "profile_all": options.profile_all,
            "profile_only": options.profile_only,
            "profile_exclude": options.profile_exclude,
            "pseudo_files": options.pseudo_files,
        },
    }
    config_path = os.path.join(path, "config.json")
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    os.environ[CHILD_CONFIG_ENV] = config_path
    existing = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = _BOOTSTRAP_DIR + (os.pathsep + existing if existing else "")
    return path


def _native_version() -> str:
    import spyglass._native as _native

    return str(_native.VERSION)


def write_handover(fragments_dir: str, options: ProfileOptions) -> str:
    """A configuration for the program image an exec'ing root process becomes: the same
    run, with this process (same pid) now finishing it as its root."""
    with open(os.path.join(fragments_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    config["root"] = {
        "pid": os.getpid(),
        "outfile": options.outfile,
        "report": options.report,
        "color": options.color,
        "html": options.html,
        "open_browser": options.open_browser,
    }
    path = os.path.join(fragments_dir, "config-root.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    return path


def activate_child() -> None:
    """Called from the bootstrap sitecustomize in a child interpreter: profile this process
    with the run's options and leave a fragment at exit."""
    import atexit

    from spyglass.runtime import process_profiler

    with open(os.environ[CHILD_CONFIG_ENV], encoding="utf-8") as f:
        config = json.load(f)
    o = config["options"]
    options = ProfileOptions(
        interval_s=o["interval_s"],
        memory=o["memory"],
        memory_window=o["memory_window"],
        program_paths=o["program_paths"],
        profile_all=o["profile_all"],
        profile_only=o["profile_only"],
        profile_exclude=o["profile_exclude"],
        pseudo_files=o["pseudo_files"],
        report=False,
    )
    root = config.get("root")
    is_root = root is not None and root.get("pid") == os.getpid()
    if is_root:  # an exec'd image of the root process: it finishes the run
        options.outfile = root["outfile"]
        options.report = root["report"]
        options.color = root["color"]
        options.html = root["html"]
        options.open_browser = root["open_browser"]
        base = os.path.join(config["fragments_dir"], "config.json")
        os.environ[CHILD_CONFIG_ENV] = base  # its own children are children again
    profiler = process_profiler.ProcessProfiler(
        options,
        program=sys.argv[0] if sys.argv else "python",
        fragments_dir=config["fragments_dir"],
        is_root=is_root,
    )
    profiler.start()
    atexit.register(process_profiler.finish_current, None)
    process_profiler.watch_sigterm()


def merge_fragments(root_json: str, fragments_dir: str) -> str:
    """The root's profile with every child's fragment merged in, plus a per-process
    breakdown; the fragment directory is removed."""
    fragments = []
    try:
        names = set(os.listdir(fragments_dir))
    except OSError:
        names = set()
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
            fragment = _recover(path)  # a child that died before it could write its profile
        else:
            continue
        if fragment is not None:
            fragments.append(_with_sources(fragment))
    import shutil

    shutil.rmtree(fragments_dir, ignore_errors=True)
    root = json.loads(root_json)
    return json.dumps(with_children(root, fragments, unprofiled))


def _read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _read_fragment(path: str) -> dict[str, Any] | None:
    # A child killed while writing its profile still has its journal.
    return _read_json(path) or _recover(path[: -len(".json")] + ".journal")


def _recover(journal: str) -> dict[str, Any] | None:
    """The profile of a child that died before it wrote one, from its run journal."""
    import spyglass._native as _native

    try:
        fragment: dict[str, Any] = json.loads(_native.recover_journal(journal))
    except (OSError, RuntimeError, ValueError) as e:
        pid = os.path.basename(journal).split("-")[1]
        print(f"spyglass: warning: process {pid} left no usable profile: {e}", file=sys.stderr)
        return None
    fragment["recovered"] = True
    return fragment


def _with_sources(fragment: dict[str, Any]) -> dict[str, Any]:
    """A profile recovered from the journal of a child killed before it could finish has
    no source text: its lines get it here, from the files."""
    import linecache

    for path, stats in (fragment.get("files") or {}).items():
        for line in stats.get("lines") or []:
            if not line.get("source") and isinstance(line.get("lineno"), int):
                line["source"] = linecache.getline(path, line["lineno"]).rstrip("\r\n")
    return fragment


def process_entry(profile: dict[str, Any]) -> dict[str, Any]:
    """One process's line in the per-process breakdown."""
    keys = ("cpu_python_s", "cpu_native_s", "cpu_system_s", "wait_s", "samples")
    entry = {
        "pid": profile.get("pid"),
        "program": profile.get("program"),
        "argv": profile.get("argv"),
        "exit_status": profile.get("exit_status"),
        "elapsed_s": profile.get("elapsed_s"),
        **{k: profile.get(k, 0) for k in keys},
    }
    if profile.get("recovered"):
        entry["recovered"] = True  # died without writing a profile: rebuilt from its journal
    if profile.get("memory_profiled"):
        from spyglass.memory import PROCESS_KEYS

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
    unprofiled: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    from spyglass.merging import merge_profiles

    memory = bool(root.get("memory_profiled"))
    processes = [process_entry(root)] + [process_entry(f) for f in fragments]
    processes += [unprofiled_entry(n, memory) for n in unprofiled or []]
    merged = merge_profiles([root, *fragments]) if fragments else root
    for key in ("program", "argv", "exit_status", "elapsed_s", "started_at", "pid"):
        merged[key] = root.get(key)  # the run is the root's: children add their work only
    merged["processes"] = processes
    return merged
