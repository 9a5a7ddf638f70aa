"""A profiling session: starts the native sampler, and turns what it collected into the
versioned JSON profile."""

from __future__ import annotations

import json
import linecache
import os
import sys
import threading

import spyglass._native as _native
from spyglass.runtime.code_scope import filter_config
from spyglass.runtime.interpreter import call_opcodes
from spyglass.runtime.options import ProfileOptions


def _source_lines(path: str) -> list[str]:
    return [line.rstrip("\r\n") for line in linecache.getlines(path)]


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

    def start(self) -> None:
        self._profiler.start(self.options.interval_s, call_opcodes())

    def stop(self) -> None:
        if self._profiler.running:
            self._remember_thread_names()
            self._profiler.stop()

    def _remember_thread_names(self) -> None:
        for t in threading.enumerate():
            native_id = getattr(t, "native_id", None)
            if native_id is not None:
                self._thread_names[native_id] = t.name

    def profile_json(self, *, program: str, argv: list[str], exit_status: int | None) -> str:
        """Serialises the profile (stop() first)."""
        scope = filter_config(self.options)
        files = self._profiler.build(scope, self._thread_names)
        meta: dict[str, object] = {
            "spyglass_version": _native.VERSION,
            "python_version": ".".join(str(v) for v in sys.version_info[:3]),
            "platform": f"{sys.platform}-{os.uname().machine}",
            "program": program,
            "argv": argv,
            "exit_status": exit_status,
            "started_at": self._profiler.started_at,
            "options": {**self.options.as_json(), "functions": [list(f) for f in scope.functions]},
        }
        sources = {path: _source_lines(path) for path in files}
        return str(self._profiler.to_json(json.dumps(meta), sources))
