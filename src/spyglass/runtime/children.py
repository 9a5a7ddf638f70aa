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
        names = sorted(n for n in os.listdir(fragments_dir) if n.startswith("process-"))
    except OSError:
        names = []
    for name in names:
        try:
            with open(os.path.join(fragments_dir, name), encoding="utf-8") as f:
                fragments.append(_with_sources(json.load(f)))
        except (OSError, ValueError):
            continue  # a child that died while writing: its fragment is lost, not the run
    import shutil

    shutil.rmtree(fragments_dir, ignore_errors=True)
    root = json.loads(root_json)
    return json.dumps(with_children(root, fragments))


def _with_sources(fragment: dict[str, Any]) -> dict[str, Any]:
    """A snapshot written by a child still running (one killed before it could finish)
    has no source text: its lines get it here, from the files."""
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
    if profile.get("memory_profiled"):
        from spyglass.memory import PROCESS_KEYS

        entry.update({k: profile.get(k, 0.0) for k in PROCESS_KEYS})
    return entry


def with_children(root: dict[str, Any], fragments: list[dict[str, Any]]) -> dict[str, Any]:
    from spyglass.merging import merge_profiles

    processes = [process_entry(root)] + [process_entry(f) for f in fragments]
    merged = merge_profiles([root, *fragments]) if fragments else root
    for key in ("program", "argv", "exit_status", "elapsed_s", "started_at", "pid"):
        merged[key] = root.get(key)  # the run is the root's: children add their work only
    merged["processes"] = processes
    return merged
