"""Profiling a Ray job's workers into one profile, through Ray's own mechanisms::

    import spyglass.ray

    with spyglass.ray.profile(outfile="job.json", num_cpus=4) as job:  # in place of ray.init
        ray.get([work.remote(x) for x in items])
    job.result  # the merged profile (also in job.json)

The block is the Ray session: ``profile`` calls ``ray.init`` (its keyword arguments go
there) with a runtime environment whose worker setup hook starts spyglass in every worker
process Ray starts for the job, and ``ray.shutdown`` at the end. Each worker sends a
snapshot of its profile so far every few seconds to a collector actor (as actor call
arguments: Ray objects), so that a worker that dies still counts; at the end the collector
tells every worker to finish, and each sends its whole profile. No file is shared and no
port opened. ``task_types`` names tasks by function and actor methods by ``Class.method``.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from types import TracebackType
from typing import Any

try:
    import ray
except ImportError:
    raise ImportError("spyglass.ray needs Ray: pip install 'spyglass-profiler[ray]'") from None

from spyglass._native import DEFAULT_INTERVAL_S
from spyglass.cluster import job as cluster_job
from spyglass.cluster import worker_side
from spyglass.cluster.ray_hook import collector_class, make_setup_hook, wait_for_first_task
from spyglass.profile_model.task_types import RAY_RUNNERS
from spyglass.runtime.options import ProfileOptions

#: How often each worker sends a snapshot: what a worker that dies without warning loses.
SNAPSHOT_EVERY_S = 5.0
#: The collector's namespace: found from every job's workers whatever the job's own is.
NAMESPACE = "spyglass"
ENV_JOB, ENV_OPTIONS, ENV_EVERY = "SPYGLASS_RAY_JOB", "SPYGLASS_RAY_OPTIONS", "SPYGLASS_RAY_EVERY"
#: How long the end waits for a live worker's profile (a worker busy in a long native call
#: answers when it returns; one on another host cannot be seen to have died).
END_WAIT_S = 30.0
#: How often a worker asks whether the job has ended. A call kept pending instead would
#: make every worker look busy to Ray, which then never retires an idle one.
POLL_S = 0.5

__all__ = ["SNAPSHOT_EVERY_S", "RayProfile", "profile"]


def _host() -> str:
    return os.uname().nodename


def _key() -> str:
    return f"{os.getpid()}@{_host()}"


#: The collector actor: holds what the job's workers send (cluster/ray_hook.py, by value).
_Collector = ray.remote(num_cpus=0, max_concurrency=16)(collector_class())


def _label() -> str:
    """This worker process in the breakdown: ``actor Class [name] pid`` for an actor's
    process, ``worker pid`` for one that runs tasks."""
    pid = os.getpid()
    try:
        context = ray.get_runtime_context()
        if context.get_actor_id():
            handle = context.current_actor
            descriptor = getattr(handle, "_ray_actor_creation_function_descriptor", None)
            cls = getattr(descriptor, "class_name", "") or "?"
            name = context.get_actor_name()
            return f"actor {cls} {name} {pid}" if name else f"actor {cls} {pid}"
    except Exception:
        pass  # not connected yet, or a Ray that names things otherwise
    return f"worker {pid}"


class _Link:
    """A worker's side of the job: finds the collector, says hello, asks every POLL_S
    whether the job has ended and sends the whole profile then. (A worker that leaves
    before, an idle one Ray retires or an actor that ends, keeps its last snapshot: by the
    time Python's exit handlers run, Ray's connection is closed.)"""

    def __init__(self, job: str) -> None:
        self.job = job
        self.key = _key()
        self.collector: Any = None

    def send_snapshot(self, payload: bytes) -> None:
        collector = self.collector
        if collector is not None:
            collector.snapshot.remote(self.key, payload)

    def start(self) -> None:
        threading.Thread(target=self._serve, name="spyglass-ray", daemon=True).start()

    def _serve(self) -> None:
        try:
            wait_for_first_task()  # no call to the collector before: it would abort Ray
            # Workers Ray starts with the session come up before the collector exists.
            while self.collector is None:
                try:
                    self.collector = ray.get_actor(f"spyglass-{self.job}", namespace=NAMESPACE)
                except Exception:
                    time.sleep(0.2)
            self.collector.hello.remote(self.key, worker_side.identity(_label()))
            while not ray.get(self.collector.ended.remote(), timeout=60):
                time.sleep(POLL_S)
            self._final(timeout=120.0)
        except Exception:
            pass  # the session is ending under us: the last snapshot stands

    def _final(self, timeout: float) -> None:
        result = worker_side.finish(self.job, _label())
        ray.get(self.collector.final.remote(self.key, result), timeout=timeout)


def _setup_worker() -> None:
    """The worker setup hook's work, in every worker process of the job."""
    job = os.environ.get(ENV_JOB)
    if not job:
        return
    options = json.loads(os.environ[ENV_OPTIONS])
    link = _Link(job)
    every = float(os.environ.get(ENV_EVERY) or SNAPSHOT_EVERY_S)
    worker_side.start(job, options, _label(), every_s=every, send=link.send_snapshot, label=_label)
    link.start()


def _alive(who: dict[str, Any]) -> bool:
    """Whether a worker may still answer: on this host, whether its process exists."""
    if who.get("host") != _host():
        return True
    try:
        os.kill(int(who["pid"]), 0)
    except ProcessLookupError:
        return False
    except (OSError, KeyError, ValueError):
        pass
    return True


class RayProfile:
    """`with spyglass.ray.profile(...) as job:` runs a Ray session whose workers are
    profiled; ``job.result`` is the merged profile (None when no worker could be
    profiled), and ``job.workers`` each worker's own profile by its label (host/worker)."""

    def __init__(
        self,
        outfile: str | os.PathLike[str] | None,
        options: ProfileOptions,
        snapshot_every: float,
        init: dict[str, Any],
    ) -> None:
        self.outfile = outfile
        self.options = options
        self.snapshot_every = snapshot_every
        self.init = init
        self.job = uuid.uuid4().hex[:12]
        self.result: dict[str, Any] | None = None
        self.workers: dict[str, dict[str, Any]] = {}
        self._collector: Any = None

    def _runtime_env(self, given: Any) -> dict[str, Any]:
        """The job's runtime environment (`given`: the user's, or None) with spyglass's
        hook, which runs the user's own first, and the job's options."""
        env = dict(given or {})
        env["env_vars"] = {
            **(env.get("env_vars") or {}),
            ENV_JOB: self.job,
            ENV_OPTIONS: json.dumps(self.options.to_json()),
            ENV_EVERY: repr(self.snapshot_every),
        }
        env["worker_process_setup_hook"] = make_setup_hook(
            env.get("worker_process_setup_hook"), f"spyglass-{self.job}", NAMESPACE
        )
        return env

    def _init_arguments(self) -> dict[str, Any]:
        """ray.init's arguments, with spyglass's hook in the job's runtime environment
        wherever the user gave theirs (a JobConfig's is replaced by `runtime_env`, so it
        goes back there, in a copy)."""
        init = dict(self.init)
        address = str(init.get("address") or os.environ.get("RAY_ADDRESS") or "")
        if address.startswith("ray://"):
            raise RuntimeError(
                "spyglass.ray.profile() cannot profile through Ray Client (ray://): run the "
                "driver on the cluster (ray job submit, or address='auto' on a node)"
            )
        job_config = init.get("job_config")
        if job_config is not None and getattr(job_config, "runtime_env", None):
            import copy

            job_config = copy.deepcopy(job_config)
            job_config.set_runtime_env(self._runtime_env(job_config.runtime_env))
            init["job_config"] = job_config
            init.pop("runtime_env", None)
        else:
            init["runtime_env"] = self._runtime_env(init.get("runtime_env"))
        return init

    def __enter__(self) -> RayProfile:
        if ray.is_initialized():
            raise RuntimeError(
                "spyglass.ray.profile() starts the Ray session itself, so that every worker "
                "starts profiled: call it in place of ray.init(), with ray.init's arguments"
            )
        ray.init(**self._init_arguments())
        try:
            self._collector = _Collector.options(
                name=f"spyglass-{self.job}",
                namespace=NAMESPACE,
                lifetime=None,
                # Its own process serves the profiling: not profiled (its hook sees no job).
                runtime_env={"env_vars": {ENV_JOB: ""}},
            ).remote(self.job)
            ray.get(self._collector.state.remote())  # it is up before the job's tasks
        except BaseException:
            ray.shutdown()
            raise
        return self

    def _gather(self) -> cluster_job.Outcomes:
        collector = self._collector
        ray.get(collector.end.remote(), timeout=60)
        deadline = time.monotonic() + END_WAIT_S
        while True:
            pending = ray.get(collector.pending.remote(), timeout=60)
            if not any(_alive(who) for who in pending.values()):
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        known, snapshots, finals = ray.get(collector.state.remote(), timeout=120)
        outcomes = cluster_job.Outcomes()
        for key, payload in snapshots.items():
            outcomes.snapshot(key, payload)
        for key, value in finals.items():
            outcomes.result(key, value)
        for key, who in known.items():
            if key not in finals and key not in snapshots:
                why = (
                    f"it sent nothing within {END_WAIT_S:.0f} s of the job's end"
                    if _alive(who)
                    else "its process ended before it sent a snapshot"
                )
                outcomes.result(key, {**who, "not_profiled": why})
        return outcomes

    def __exit__(
        self,
        etype: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            outcomes = self._gather()
        except Exception as e:  # the session is gone: nothing is left to gather
            cluster_job.warn(f"could not gather the workers' profiles ({e})")
            outcomes = cluster_job.Outcomes()
        finally:
            ray.shutdown()
        self.result, self.workers = cluster_job.finish(
            outcomes, RAY_RUNNERS, engine="Ray", outfile=self.outfile
        )


def profile(
    *,
    outfile: str | os.PathLike[str] | None = None,
    interval: float = DEFAULT_INTERVAL_S,
    program_path: str | list[str] | None = None,
    profile_all: bool = False,
    memory: bool = True,
    memory_window: int | None = None,
    gpu: bool = False,
    snapshot_every: float = SNAPSHOT_EVERY_S,
    **init: Any,
) -> RayProfile:
    """Runs a Ray session (``ray.init(**init)``) for the duration of a `with` block, with
    every worker process of the job profiled, and merges their profiles into one (written
    to `outfile` when given). The options are spyglass.start()'s; the user's code defaults
    to the caller's directory, which the workers must see by the same path (else give
    `program_path`, or `profile_all`)."""
    options = cluster_job.worker_options(
        interval=interval,
        program_path=program_path,
        profile_all=profile_all,
        memory=memory,
        memory_window=memory_window,
        gpu=gpu,
    )
    return RayProfile(outfile, options, snapshot_every, init)
