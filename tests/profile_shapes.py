"""Profiles of the shapes real programs give, built sample by sample so that their
arithmetic holds (files = lines = functions, totals = files + unattributed = threads):

- ``server_profile``: a thread-per-request HTTP server, 600 request threads
  ``Thread-N (process_request_thread)`` and a few clients;
- ``tower_profile``: a 2,000-frame-deep recursion under a tower of nested imports (stacks
  keep their innermost 128 frames under a ``<truncated>`` root, as the collector does);
- ``library_profile``: a run through 25 files, whose hottest line is long.

The figures are made up but deterministic (a seeded generator), and every stack is a
path through the program the profile describes.
"""

from __future__ import annotations

import random
from typing import Any

MAX_FRAMES = 128  # the collector's stack depth (a stack holds at most 129 frames)
US = 1e-6

Frame = tuple[str, str, int, str]  # file, function, line, the line's source

IMPORT_FILE = "<frozen importlib._bootstrap>"
IMPORT_EXTERNAL = "<frozen importlib._bootstrap_external>"


class Builder:
    """Adds samples (a stack, a thread, CPU split and wait) and makes the profile."""

    def __init__(self, program: str, profiled: set[str]) -> None:
        self.program = program
        self.profiled = profiled  # the files the profile reports line by line
        self.threads: list[dict[str, Any]] = []
        self.thread_ids: dict[str, int] = {}
        self.files: dict[str, dict[int, dict[str, Any]]] = {}
        self.functions: dict[str, dict[tuple[str, int], dict[str, int]]] = {}
        self.frames: list[dict[str, Any]] = []
        self.frame_ids: dict[tuple[str, str, int], int] = {}
        self.stacks: dict[tuple[int, ...], dict[str, int]] = {}
        self.unattributed = _zero()
        self.first_lines: dict[tuple[str, str], int] = {}

    def thread(self, name: str | None) -> int:
        index = len(self.threads)
        self.threads.append({"tid": 1000 + index, "name": name, **_zero()})
        return index

    def frame_id(self, frame: Frame) -> int:
        key = frame[:3]
        if key not in self.frame_ids:
            self.frame_ids[key] = len(self.frames)
            self.frames.append({"file": frame[0], "function": frame[1], "lineno": frame[2]})
        return self.frame_ids[key]

    def sample(
        self, stack: list[Frame], thread: int, py: int, nat: int = 0, sys: int = 0, wait: int = 0
    ) -> None:
        """``stack`` outermost first; figures in microseconds (one sample per 10 ms)."""
        fig = {
            "cpu_python_s": py,
            "cpu_native_s": nat,
            "cpu_system_s": sys,
            "wait_s": wait,
            "samples": (py + nat + sys) // 10_000,
        }
        _add(self.threads[thread], fig)
        inner = next((f for f in reversed(stack) if f[0] in self.profiled), None)
        if inner is None:
            _add(self.unattributed, fig)
        else:
            path, function, lineno, source = inner
            line = self.files.setdefault(path, {}).setdefault(
                lineno, {"lineno": lineno, "source": source, **_zero()}
            )
            _add(line, fig)
            first = self.first_lines.setdefault((path, function), lineno)
            funcs = self.functions.setdefault(path, {})
            _add(funcs.setdefault((function, first), _zero()), fig)
        ids = [self.frame_id(f) for f in stack]
        if len(ids) > MAX_FRAMES:
            ids = [self.frame_id(("<truncated>", "", 0, "")), *ids[-MAX_FRAMES:]]
        _add(self.stacks.setdefault(tuple(ids), _zero()), fig)

    def profile(self) -> dict[str, Any]:
        files = {}
        for path in sorted(self.files):
            lines = [
                {"lineno": ln["lineno"], "source": ln["source"], **_seconds(ln)}
                for _, ln in sorted(self.files[path].items())
            ]
            funcs = [
                {"name": name, "first_lineno": first, **_seconds(fig)}
                for (name, first), fig in sorted(
                    self.functions[path].items(), key=lambda kv: kv[0][1]
                )
            ]
            total = _zero()
            for ln in self.files[path].values():
                _add(total, ln)
            files[path] = {**_seconds(total), "lines": lines, "functions": funcs}
        totals = _zero()
        for thread in self.threads:
            _add(totals, thread)
        stacks = [{"frames": list(k), **_seconds(v)} for k, v in self.stacks.items()]
        stacks.sort(key=lambda s: -sum(s[k] for k in _TIME_KEYS))
        return {
            "format": "spyglass-profile",
            "schema_version": 3,
            "spyglass_version": "0.1.0",
            "python_version": "3.12.1",
            "platform": "linux-x86_64",
            "program": self.program,
            "argv": [self.program],
            "exit_status": 0,
            "started_at": 1764000000.0,
            "elapsed_s": round(max(_seconds(t)["wait_s"] for t in self.threads) + 1.0, 6),
            "interval_s": 0.01,
            **_seconds(totals),
            "memory_profiled": False,
            "unattributed": _seconds(self.unattributed),
            "threads": [{**t, **_seconds(t)} for t in self.threads],
            "files": files,
            "frames": self.frames,
            "stacks": stacks,
            "options": {
                "program_path": ["/srv/app"],
                "profile_all": False,
                "profile_only": [],
                "profile_exclude": [],
                "interval_s": 0.01,
                "functions": [],
            },
        }


_TIME_KEYS = ("cpu_python_s", "cpu_native_s", "cpu_system_s", "wait_s")


def _zero() -> dict[str, int]:
    return {"cpu_python_s": 0, "cpu_native_s": 0, "cpu_system_s": 0, "wait_s": 0, "samples": 0}


def _add(target: dict[str, Any], fig: dict[str, Any]) -> None:
    for key in (*_TIME_KEYS, "samples"):
        target[key] += fig[key]


def _seconds(fig: dict[str, Any]) -> dict[str, Any]:
    out = {k: round(fig[k] * US, 6) for k in _TIME_KEYS}
    out["samples"] = fig["samples"]
    return out


# --------------------------------------------------------------------------- the shapes

APP = "/srv/app/server.py"
SOCKETSERVER = "/usr/lib/python3.12/socketserver.py"
HTTPSERVER = "/usr/lib/python3.12/http/server.py"
THREADING = "/usr/lib/python3.12/threading.py"
LONG_HOT_LINE = (
    "    body = json.dumps({'user': user, 'orders': [summarize(o, currency=currency, "
    "rounding=rounding) for o in orders], 'total': total}).encode('utf-8')"
)


def server_profile(requests: int = 600, clients: int = 8, seed: int = 1) -> dict[str, Any]:
    rng = random.Random(seed)
    b = Builder(APP, {APP})
    main = b.thread("MainThread")
    module = (APP, "<module>", 40, "    httpd.serve_forever()")
    serve = [module, (SOCKETSERVER, "serve_forever", 235, ""), (SOCKETSERVER, "select", 0, "")]
    b.sample(serve, main, 20_000, 10_000, 10_000, wait=9_000_000)
    base = [
        (THREADING, "_bootstrap", 1002, ""),
        (THREADING, "_bootstrap_inner", 1045, ""),
        (THREADING, "run", 982, ""),
        (SOCKETSERVER, "process_request_thread", 697, ""),
        (SOCKETSERVER, "finish_request", 362, ""),
        (HTTPSERVER, "handle", 436, ""),
        (HTTPSERVER, "handle_one_request", 424, ""),
        (APP, "do_GET", 12, "        payload = self.render(self.path)"),
    ]
    render = (APP, "render", 20, LONG_HOT_LINE)
    summarize = (APP, "summarize", 30, "    return round(sum(i.price * i.qty for i in o.items), 2)")
    for i in range(requests):
        t = b.thread(f"Thread-{i + clients + 1} (process_request_thread)")
        b.sample([*base, render, summarize], t, 10_000 * rng.randint(1, 4), 1_000, 500)
        b.sample(
            [*base, render], t, 10_000 * rng.randint(0, 2), 2_000, 0, wait=rng.randint(1, 9) * 1000
        )
        b.sample(base, t, 0, 0, 1_000, wait=rng.randint(1, 5) * 1000)
    client = [(THREADING, "run", 982, ""), (APP, "client", 50, "        urlopen(url).read()")]
    for c in range(clients):
        t = b.thread(f"Thread-{c + 1} (client)")
        b.sample(client, t, 10_000 * rng.randint(3, 6), 5_000, 5_000, wait=1_500_000)
    return b.profile()


TOWER_APP = "/srv/app/deep.py"


def tower_profile(depth: int = 2000, imports: int = 30) -> dict[str, Any]:
    """A program that imports 30 modules each importing the next (the import machinery's
    frames between every two), then recurses ``depth`` frames deep."""
    b = Builder(TOWER_APP, {TOWER_APP})
    main = b.thread("MainThread")
    top = (TOWER_APP, "<module>", 3, "import sympylike")
    tower: list[Frame] = [top]
    for level in range(imports):
        tower += [
            (IMPORT_FILE, "_find_and_load", 1360, ""),
            (IMPORT_FILE, "_find_and_load_unlocked", 1331, ""),
            (IMPORT_FILE, "_load_unlocked", 935, ""),
            (IMPORT_EXTERNAL, "exec_module", 995, ""),
            (IMPORT_FILE, "_call_with_frames_removed", 488, ""),
            (f"/srv/lib/sympylike/mod{level}.py", "<module>", 2, ""),
        ]
    b.sample(tower, main, 600_000, 200_000, 100_000)
    recurse = [(TOWER_APP, "<module>", 20, "print(walk(tree, 0))")]
    recurse += [(TOWER_APP, "walk", 9, "    return walk(node.child, depth + 1)")] * (depth - 1)
    b.sample(
        [*recurse, (TOWER_APP, "walk", 8, "    total = sum(v * v for v in node.values)")],
        main,
        1_500_000,
        10_000,
    )
    b.sample(recurse, main, 400_000)
    b.sample([(TOWER_APP, "<module>", 21, "report(tree)")], main, 300_000, 0, 0, wait=50_000)
    return b.profile()


LIB_APP = "/srv/app/analysis.py"
LIB_HOT = (
    "    return sp.integrate(x**3 + 2*x**2 - 5*x + 7, (x, 0, 10)) + "
    "sp.integrate(sp.sin(x) * sp.exp(-x / 3), (x, 0, sp.pi))  # both terms, one pass"
)


def library_profile(n_files: int = 25, seed: int = 3) -> dict[str, Any]:
    rng = random.Random(seed)
    paths = [LIB_APP] + [f"/srv/lib/sympylike/core/part{i:02d}.py" for i in range(n_files - 1)]
    b = Builder(LIB_APP, set(paths))
    main = b.thread("MainThread")
    entry = (LIB_APP, "<module>", 30, "print(area())")
    hot = (LIB_APP, "area", 12, LIB_HOT)
    b.sample([entry, hot], main, 900_000, 300_000, 20_000)
    for i, path in enumerate(paths[1:]):
        frame = (path, f"op_{i}", 10 + i, f"        result = self._apply_{i}(args, evaluate=True)")
        b.sample([entry, hot, frame], main, 10_000 * rng.randint(2, 40), 10_000 * rng.randint(0, 5))
        other = (
            path,
            f"op_{i}",
            11 + i,
            "        return self.func(*[a.doit() for a in result.args])",
        )
        b.sample([entry, hot, frame, other], main, 10_000 * rng.randint(1, 10))
    return b.profile()


__all__ = ["Builder", "library_profile", "server_profile", "tower_profile"]
