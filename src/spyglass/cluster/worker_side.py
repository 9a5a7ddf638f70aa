"""What runs in each worker process of a cluster job: spyglass started there, snapshots
of its profile so far, and the profile at the end, each as compressed bytes the engine
carries back to the client (Dask's events and `Client.run`, Ray's object store).

Engine-neutral: the engine's integration says when to start and stop and how to send.

A worker profiles itself as every process of `spyglass run` does, journaling as it goes
(in a directory of its own host's temporary space, never shared). A snapshot is the
collector's own replay of that journal (`_native.recover_journal`): it reads what the
sampler has already written, costs nothing on the sampled threads, and does not stop or
restart profiling; its cost is proportional to the profile, not to the time run.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import zlib
from collections.abc import Callable
from typing import Any

from spyglass.profile_model.compact import expanded
from spyglass.runtime.options import ProfileOptions
from spyglass.runtime.session import Session

# The profiles of this process, by job (a process may serve several workers, or jobs).
_jobs: dict[str, WorkerProfile] = {}
_lock = threading.Lock()


def encode(profile: dict[str, Any]) -> bytes:
    """A profile as the bytes a worker sends: JSON, compressed (a tenth of its size)."""
    return zlib.compress(json.dumps(profile, separators=(",", ":")).encode(), 6)


def decode(payload: bytes) -> dict[str, Any]:
    # Sent compact, as the native side writes profiles (and a tenth smaller compressed).
    return expanded(json.loads(zlib.decompress(payload)))


def identity(worker: str) -> dict[str, Any]:
    """What tells this worker process apart in the job's breakdown."""
    return {"host": os.uname().nodename, "worker": worker, "pid": os.getpid()}


class WorkerProfile:
    """spyglass in one worker process, for one job."""

    def __init__(
        self,
        job: str,
        options: dict[str, Any],
        worker: str,
        label: Callable[[], str] | None = None,
    ) -> None:
        self.job = job
        self.worker = worker
        self.label = label  # the worker's name as of now, where the engine learns it later
        self.options = ProfileOptions.from_json(options)
        self.session: Session | None = None
        self.not_profiled = ""  # why this worker could not be profiled
        self._dir = ""
        self._journal = ""
        self._stop = threading.Event()
        self._last_samples = -1

    def start(self) -> None:
        from spyglass.runtime.session import running_sessions

        if running_sessions():
            # The timers and hooks are per process: a second worker in this process (a
            # threaded cluster), or a program profiling itself, is already covered.
            self.not_profiled = "its process is already being profiled"
            return
        self._dir = tempfile.mkdtemp(prefix="spyglass-worker-")
        self._journal = os.path.join(self._dir, "worker.journal")
        session = Session(self.options)
        try:
            session.start(journal_path=self._journal, program=f"worker {self.worker}")
        except Exception as e:  # a platform the sampler cannot run on: the job goes on
            self.not_profiled = f"spyglass could not start: {e}"
            shutil.rmtree(self._dir, ignore_errors=True)
            return
        self.session = session

    def snapshot(self) -> bytes | None:
        """The profile so far, or None when it holds nothing new since the last one."""
        if self.session is None or not self.session.running:
            return None
        import spyglass._native as _native

        try:
            profile: dict[str, Any] = json.loads(_native.recover_journal(self._journal))
        except (OSError, RuntimeError, ValueError):
            return None  # not a whole sampling interval journaled yet
        samples = int(profile.get("samples") or 0) + int(profile.get("mem_samples") or 0)
        if samples == self._last_samples:
            return None
        self._last_samples = samples
        from spyglass.runtime.fragments import with_sources

        name = self.label() if self.label is not None else self.worker
        return encode({**with_sources(profile), **identity(name), "snapshot": True})

    def finish(self) -> bytes | dict[str, Any]:
        """Stops profiling: the whole profile, or a note saying why there is none."""
        self._stop.set()
        session, self.session = self.session, None
        if session is None:
            return {**identity(self.worker), "not_profiled": self.not_profiled or "stopped"}
        try:
            session.stop()
            text = session.profile_json(program=f"worker {self.worker}", argv=[], exit_status=None)
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)
        return encode({**json.loads(text), **identity(self.worker)})

    def send_snapshots(self, every_s: float, send: Callable[[bytes], None]) -> None:
        """Sends a snapshot every `every_s` seconds from a thread of its own until finish()."""

        def loop() -> None:
            while not self._stop.wait(every_s):
                try:
                    payload = self.snapshot()
                    if payload is not None:
                        send(payload)
                except Exception:  # a worker closing under us: the final profile decides
                    return

        threading.Thread(target=loop, name="spyglass-snapshots", daemon=True).start()


def start(
    job: str,
    options: dict[str, Any],
    worker: str,
    *,
    every_s: float,
    send: Callable[[bytes], None],
    label: Callable[[], str] | None = None,
) -> None:
    """Starts profiling this process for `job` (once, however often the engine asks).
    `label`, when given, names the worker in each snapshot (a Ray worker becomes an
    actor's process after it started)."""
    with _lock:
        if job in _jobs:
            return
        profile = _jobs[job] = WorkerProfile(job, options, worker, label)
        profile.start()
    if profile.session is not None:
        profile.send_snapshots(every_s, send)


def finish(job: str, worker: str) -> bytes | dict[str, Any]:
    """Stops profiling this process for `job`: its profile (compressed), or a note. The
    profile is labelled `worker` (an engine may know better at the end what the process
    was, a Ray actor's class for one)."""
    with _lock:
        profile = _jobs.pop(job, None)
    if profile is None:
        return {**identity(worker), "not_profiled": "spyglass was not started in it"}
    profile.worker = worker
    return profile.finish()


def discard(job: str) -> None:
    """Stops profiling this process for `job` and drops what it had: the process turned
    out to serve the profiling itself (Ray's collector actor, for one)."""
    with _lock:
        profile = _jobs.pop(job, None)
    if profile is not None:
        profile.finish()


def last_snapshot(job: str) -> bytes | None:
    """A final snapshot of a worker that is closing (the engine sends it on its way out)."""
    with _lock:
        profile = _jobs.get(job)
    return None if profile is None else profile.snapshot()
