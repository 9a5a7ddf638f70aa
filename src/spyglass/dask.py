"""Profiling a Dask job's workers into one profile, through Dask's own communication::

    import spyglass.dask

    with spyglass.dask.profile(client, outfile="job.json") as job:
        client.gather(client.map(work, items))
    job.result  # the merged profile (also in job.json)

A worker plugin starts spyglass in every worker process (those that join during the block
too: the scheduler hands them the plugin). Each worker sends a snapshot of its profile so
far every few seconds as a Dask event, so that a worker that dies still counts; at the
end `Client.run` stops each worker and brings its profile back. No file is shared and no
port opened. The profile's ``processes`` lists each worker by host and name (and those
that could not be profiled, with the reason), and ``task_types`` says which task type spent
what (profile_model.task_types).
"""

from __future__ import annotations

import os
import uuid
from types import TracebackType
from typing import Any

try:
    from distributed import Client, WorkerPlugin
except ImportError:
    raise ImportError(
        "spyglass.dask needs Dask's distributed scheduler: pip install 'spyglass-profiler[dask]'"
    ) from None

from spyglass._native import DEFAULT_INTERVAL_S
from spyglass.cluster import job as cluster_job
from spyglass.cluster import worker_side
from spyglass.profile_model.task_types import DASK_RUNNERS
from spyglass.runtime.options import ProfileOptions

#: How often each worker sends a snapshot: what a worker that dies without warning loses.
#: A snapshot replays the worker's journal (milliseconds for a profile of thousands of
#: lines) and travels compressed (tens of kB) on the worker's existing connection.
SNAPSHOT_EVERY_S = 5.0

__all__ = ["SNAPSHOT_EVERY_S", "DaskProfile", "profile"]


class _SpyglassPlugin(WorkerPlugin):
    """Starts spyglass in a worker process, and sends its snapshots as Dask events."""

    idempotent = True  # registered again (another job) it must not start twice

    def __init__(self, job: str, options: dict[str, Any], every_s: float) -> None:
        self.job = job
        self.options = options
        self.every_s = every_s
        self.topic = f"spyglass-{job}"

    def setup(self, worker: Any) -> None:
        topic, address, loop = self.topic, str(worker.address), worker.loop

        def send(payload: bytes) -> None:
            # From the snapshot thread: the worker's comms belong to its event loop.
            loop.add_callback(worker.log_event, topic, {"worker": address, "payload": payload})

        worker_side.start(self.job, self.options, str(worker.name), every_s=self.every_s, send=send)

    def teardown(self, worker: Any) -> None:
        # A worker closing during the job (retired, scaled down) sends what it has on its
        # way out; after the job, finish() has already taken it and this does nothing.
        payload = worker_side.last_snapshot(self.job)
        worker_side.finish(self.job, str(worker.name))
        if payload is not None:
            try:
                worker.log_event(self.topic, {"worker": str(worker.address), "payload": payload})
            except Exception:
                pass  # its connection is already gone: its last periodic snapshot stands


def _finish_here(job: str, dask_worker: Any) -> bytes | dict[str, Any]:
    """Run on each worker at the end (`Client.run`): its profile, or why there is none."""
    return worker_side.finish(job, str(dask_worker.name))


class DaskProfile:
    """`with spyglass.dask.profile(client) as job:` profiles the job's workers;
    ``job.result`` is the merged profile (None when no worker could be profiled), and
    ``job.workers`` each worker's own profile by its label (host/worker)."""

    def __init__(
        self,
        client: Client,
        outfile: str | os.PathLike[str] | None,
        options: ProfileOptions,
        snapshot_every: float,
    ) -> None:
        self.client = client
        self.outfile = outfile
        self.options = options
        self.snapshot_every = snapshot_every
        self.job = uuid.uuid4().hex[:12]
        self.topic = f"spyglass-{self.job}"
        self.outcomes = cluster_job.Outcomes()
        self.result: dict[str, Any] | None = None
        self.workers: dict[str, dict[str, Any]] = {}

    def _on_snapshot(self, event: tuple[float, Any]) -> None:
        msg = event[1]
        if isinstance(msg, dict) and isinstance(msg.get("payload"), bytes):
            self.outcomes.snapshot(str(msg.get("worker")), msg["payload"])

    def __enter__(self) -> DaskProfile:
        self.client.subscribe_topic(self.topic, self._on_snapshot)
        plugin = _SpyglassPlugin(self.job, self.options.to_json(), self.snapshot_every)
        try:
            self.client.register_plugin(plugin, name=self.topic)
        except Exception:
            # A worker could not take the plugin (spyglass not importable there): the
            # others run it, and the end lists that worker with the reason.
            pass
        return self

    def __exit__(
        self,
        etype: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        client = self.client
        try:
            results = client.run(_finish_here, self.job, on_error="return")
        except Exception as e:  # the cluster is gone: the snapshots are what is left
            cluster_job.warn(f"could not reach the workers at the end ({e}): snapshots only")
            results = {}
        for worker, outcome in results.items():
            self.outcomes.result(str(worker), outcome)
        try:
            client.unregister_worker_plugin(self.topic)
        except Exception:
            pass  # a cluster shutting down; nothing is left to start
        client.unsubscribe_topic(self.topic)
        self.result, self.workers = cluster_job.finish(
            self.outcomes, DASK_RUNNERS, engine="Dask", outfile=self.outfile
        )


def profile(
    client: Client,
    *,
    outfile: str | os.PathLike[str] | None = None,
    interval: float = DEFAULT_INTERVAL_S,
    program_path: str | list[str] | None = None,
    profile_all: bool = False,
    memory: bool = True,
    memory_window: int | None = None,
    gpu: bool = False,
    snapshot_every: float = SNAPSHOT_EVERY_S,
) -> DaskProfile:
    """Profiles every worker of `client`'s cluster for the duration of a `with` block and
    merges their profiles into one (written to `outfile` when given). The options are
    spyglass.start()'s; the user's code defaults to the caller's directory, which the
    workers must see by the same path (else give `program_path`, or `profile_all`)."""
    options = cluster_job.worker_options(
        interval=interval,
        program_path=program_path,
        profile_all=profile_all,
        memory=memory,
        memory_window=memory_window,
        gpu=gpu,
        pseudo_files=[cluster_job.DYNAMIC_CODE],  # the client's own functions, sent by value
    )
    return DaskProfile(client, outfile, options, snapshot_every)
