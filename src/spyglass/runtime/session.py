"""A profiling session: starts the native sampler, and turns what it collected into the
versioned JSON profile."""

from __future__ import annotations

import _thread
import gc
import os
import sys

import spyglass._native as _native
from spyglass.json_text import dumps
from spyglass.runtime.code_scope import filter_config
from spyglass.runtime.options import ProfileOptions
from spyglass.runtime.stdlib_patches import watch_threads

TYPE_CHECKING = False  # typing costs milliseconds of start-up, which every run pays
if TYPE_CHECKING:
    import threading
    from collections.abc import Mapping

# Native thread id -> name, noted as each thread starts (shared by all sessions).
_started_thread_names: dict[int, str] = {}
# The sessions of this process started and not yet stopped (the test suite checks that
# none is left behind).
_running: set[Session] = set()


def running_sessions() -> int:
    """How many sessions of this process are started and not stopped."""
    return sum(1 for session in _running if session.running)


def note_current_thread() -> None:
    """Notes the calling thread's name under its native id. A forked child must: its one
    thread has a new native id, which threading does not update (its Thread object keeps
    the parent's)."""
    _started_thread_names[_thread.get_native_id()] = _current_thread_name()


def _current_thread_name() -> str:
    # threading is only asked if the program imported it (stdlib_patches says why): a
    # process without it has only threads it does not name, the first of them the main one.
    threading = sys.modules.get("threading")
    return threading.current_thread().name if threading is not None else "MainThread"


def _members(meta: dict[str, object]) -> list[tuple[str, str]]:
    """The top-level members this layer adds to the native writer's document: each key
    with its value as JSON text (the writer puts them in as they are)."""
    return [(key, dumps(value, compact=True)) for key, value in meta.items()]


def _source_lines(path: str) -> list[str]:
    if path == "<string>":
        # `python -c CODE`: linecache has no file for it, the command line has the code.
        from spyglass.runtime.invocation import this_process

        kind, code = this_process()
        if kind == "code":
            return code.splitlines()
    linecache = sys.modules.get("linecache")
    if linecache is not None and "tokenize" in sys.modules:
        # The program's own linecache, which may hold source it registered itself; only
        # when nothing is left for it to import (source_lines says why).
        return [line.rstrip("\r\n") for line in linecache.getlines(path)]
    registered = getattr(linecache, "cache", {}).get(path)
    if isinstance(registered, tuple) and len(registered) >= 3 and isinstance(registered[2], list):
        return [str(line).rstrip("\r\n") for line in registered[2]]
    from spyglass.runtime.source_lines import read_lines

    return read_lines(path)


def _code_run_by(thread: threading.Thread) -> object:
    """The code object a thread ran: its target's, or its own run()'s."""
    run = getattr(type(thread), "run", None)
    plain_run = getattr(getattr(sys.modules.get("threading"), "Thread", None), "run", None)
    func = getattr(thread, "_target", None) if run is plain_run else run
    return getattr(func, "__code__", None)


class Session:
    """One start/stop cycle of the native profiler."""

    def __init__(self, options: ProfileOptions) -> None:
        self.options = options
        self._profiler = _native.Profiler()
        self._thread_names: dict[int, str] = {}
        self._pid = os.getpid()

    @property
    def running(self) -> bool:
        return bool(self._profiler.running)

    @property
    def in_original_process(self) -> bool:
        """False in a forked child, which must not write the parent's profile."""
        return os.getpid() == self._pid and not self._profiler.abandoned

    def start(
        self,
        *,
        journal_path: str = "",
        program: str = "",
        interpreter: dict[str, list[int]] | None = None,
    ) -> None:
        """Starts profiling. With a `journal_path`, the run is journaled there as it is
        collected, for a child process that may be killed before it can write its profile
        (see `_native.recover_journal`). `interpreter` is interpreter.facts(), when
        the caller knows them already (importing dis costs every process of a run)."""
        if interpreter is None:
            from spyglass.runtime.interpreter import facts

            interpreter = facts()
        scope = filter_config(self.options)
        meta = self._meta(program, list(sys.argv), None, scope) if journal_path else {}
        meta.pop("started_at", None)  # not known yet: the native side adds it
        self._profiler.start(
            self.options.interval_s,
            interpreter["call_opcodes"],
            interpreter["bytecode_flags"],
            memory=self.options.memory,
            memory_window=self.options.memory_window,
            scope=scope,
            journal_path=journal_path,
            journal_meta=_members(meta),
            gpu=self.options.gpu,
        )
        _running.add(self)
        self._watch_thread_names()

    def _watch_thread_names(self) -> None:
        """Threads that end before the profile is built take their names with them: note
        each thread's name as it starts running. Each thread also tells the sampler when
        it starts and ends, so that short-lived threads are profiled whole."""
        names = _started_thread_names
        started, exiting = _native.thread_started, _native.thread_exiting

        def _started(thread: threading.Thread) -> None:
            names[_thread.get_native_id()] = thread.name
            started(_code_run_by(thread))  # run() forgets its target as it ends

        watch_threads(
            _started, exiting, _native.watch_direct_threads, _native.wrap_thread_bootstrap
        )

    def stop(self, *, collect_garbage: bool = False) -> None:
        """`collect_garbage`: the program is leaving normally (_collect_garbage_before_leaks)."""
        _running.discard(self)
        if self._profiler.running:
            self._remember_thread_names()
            if collect_garbage:
                self._collect_garbage_before_leaks()
            self._profiler.stop()

    def _collect_garbage_before_leaks(self) -> None:
        """Cyclic garbage lives until the interpreter's next full collection, which a run of
        a few seconds may never reach: sympy's, rising over each unit of work, had a line
        called a leak in half the runs. Where a line looks like one, the garbage is
        collected while the hooks still see its frees, and only what stays is judged: only
        as the interpreter leaves normally, whose own collections would run the same
        finalizers. A program that turned the collector off keeps its garbage, which is
        then no mistake."""
        if self.options.memory and gc.isenabled() and self._profiler.leaks_suspected():
            gc.collect()

    def _remember_thread_names(self) -> None:
        self._thread_names.update(_started_thread_names)
        threading = sys.modules.get("threading")
        if threading is None:
            self._thread_names.setdefault(_thread.get_native_id(), _current_thread_name())
            return
        for t in threading.enumerate():
            native_id = getattr(t, "native_id", None)
            if native_id is not None:
                self._thread_names[native_id] = t.name

    def profile_json(
        self,
        *,
        program: str,
        argv: list[str],
        exit_status: int | None,
        notes: Mapping[str, object] | None = None,
    ) -> str:
        """Serialises the profile (stop() first); `notes` are added to its top level."""
        scope = filter_config(self.options)
        files = self._profiler.build(scope, self._thread_names)
        meta = {**self._meta(program, argv, exit_status, scope), **(notes or {})}
        sources = {path: _source_lines(path) for path in files}
        return str(self._profiler.to_json(_members(meta), sources))

    def _meta(
        self, program: str, argv: list[str], exit_status: int | None, scope: _native.FilterConfig
    ) -> dict[str, object]:
        return {
            "spyglass_version": _native.VERSION,
            "python_version": ".".join(str(v) for v in sys.version_info[:3]),
            "platform": f"{sys.platform}-{os.uname().machine}",
            "program": program,
            "pid": os.getpid(),
            "host": os.uname().nodename,  # profiles of several hosts merge into one
            "argv": argv,
            "exit_status": exit_status,
            "started_at": self._profiler.started_at,
            "options": {**self.options.recorded(), "functions": [list(f) for f in scope.functions]},
        }
