"""`executor: ray`: a run's planned work spread over Ray actors, the driver the store's one writer.

The driver plans exactly as the in-process runner (`plan_units`), so batch composition and every output do
not depend on the executor, and stores each unit's generations under `execute`'s lock when the unit comes back
whole: a dead actor's unfinished units are re-queued, nothing is lost or stored twice (docs/scale-out.md).
Actors are pooled per device and shape for the process; each loads a model once and keeps one engine per run
attached between units, so hooks and calibration are paid once per run. An actor never writes the store.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrun.contract.errors import UsageError
from evalrun.contract.types import Generation
from evalrun.runners.accel.accelerations import Accelerations
from evalrun.runners.base import RunRequest, frozen_heap
from evalrun.runners.batch_plan import WorkUnit
from evalrun.runners.models import device_kind

# a Ray instance started here: its actors do the run's work, so they run at the driver's priority (Ray's
# default starts workers at niceness 15, which leaves them only what every other process on the machine spares)
LOCAL_SYSTEM_CONFIG: dict[str, Any] = {"worker_niceness": 0}
_QUIET: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": False}
RESTART_WAIT_SECONDS = 600  # how long a restarting actor (a model to load again, a node to replace) is waited for
INSTALL_HINT = "pip install 'evalrun[ray]' (or pip install 'ray>=2.9')"


class RaySettings(BaseModel):
    """Where the actors run and how many; none of it is part of the run key (outputs do not depend on it)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    # None: RAY_ADDRESS when set, else a local instance on this machine; "local" always starts one
    address: str | None = None
    # "auto": one per GPU (device cuda) or one per `cpus_per_actor` cores of the cluster
    actors: int | Literal["auto"] = "auto"
    cpus_per_actor: int = Field(default=1, ge=1, le=1024)
    gpus_per_actor: float = Field(default=1.0, gt=0.0, le=16.0)  # used when the device is cuda
    # restarts Ray grants a dead actor (its model is loaded again); its unfinished units are re-queued either way
    max_restarts: int = Field(default=0, ge=0, le=100)
    # units queued at an actor beyond the one it is generating (hides the driver's round trip)
    prefetch: int = Field(default=1, ge=0, le=64)


class RayUnavailable(UsageError, RuntimeError):
    """Ray is not installed, or the cluster cannot hold the actors asked for."""


def require_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable(f"executor: ray needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def connect(settings: RaySettings) -> dict[str, float]:
    """Join (or start) the Ray instance once per process; its resources (CPU, GPU counts)."""
    ray = require_ray()
    if not ray.is_initialized():
        address = settings.address or os.environ.get("RAY_ADDRESS") or "local"
        if address == "local":
            ray.init(**local_options(os.cpu_count() or 1))
        else:
            ray.init(address=address, **_QUIET)
    return dict(ray.cluster_resources())


def local_options(num_cpus: int) -> dict[str, Any]:
    """`ray.init` arguments that start a Ray instance on this machine for a run."""
    return {"address": "local", "num_cpus": num_cpus, "_system_config": LOCAL_SYSTEM_CONFIG, **_QUIET}


def cluster_device(settings: RaySettings, device: str) -> str:
    """`device: auto` under Ray is the cluster's: cuda when it has GPUs, wherever the driver runs."""
    if device != "auto":
        return device
    return "cuda" if connect(settings).get("GPU", 0) > 0 else "cpu"


@dataclass
class Actor:
    handle: Any
    name: str
    info: dict[str, Any]
    runs: set[str] = field(default_factory=set)  # run ids registered with it
    alive: bool = True
    inflight: int = 0
    restarts: int = 0


class Pool:
    """The actors of one device and shape, shared by every run of this process."""

    def __init__(self, settings: RaySettings, device: str) -> None:
        ray = require_ray()
        resources = connect(settings)
        gpus = settings.gpus_per_actor if device.startswith("cuda") else 0.0
        if gpus:
            have, unit = resources.get("GPU", 0.0), gpus
        else:
            have, unit = resources.get("CPU", 0.0), float(settings.cpus_per_actor)
        fits = int(have // unit)
        count = fits if settings.actors == "auto" else settings.actors
        what = f"{unit:g} {'GPU' if gpus else 'CPU'}"
        if count < 1 or count > fits:
            raise RayUnavailable(f"ray.actors: {count} actor(s) of {what} each do not fit the Ray cluster's "
                                 f"{have:g} {'GPU' if gpus else 'CPU'}(s): lower ray.actors or "
                                 f"ray.{'gpus' if gpus else 'cpus'}_per_actor")
        remote = ray.remote(Worker).options(num_cpus=settings.cpus_per_actor, num_gpus=gpus,
                                            max_restarts=settings.max_restarts, max_task_retries=0)
        threads = None if gpus else settings.cpus_per_actor
        handles = [remote.remote(threads) for _ in range(count)]
        infos = ray.get([h.describe.remote(device) for h in handles])
        self.device = device
        self.actors = [Actor(h, f"actor-{i}", info) for i, (h, info) in enumerate(zip(handles, infos))]

    def alive(self) -> list[Actor]:
        return [a for a in self.actors if a.alive]

    def check(self, actor: Actor) -> bool:
        """After a failed unit: is the actor back (restarted, its engines gone) or dead for good?"""
        ray = require_ray()
        restarting = getattr(ray.exceptions, "ActorUnavailableError", ())
        deadline = time.monotonic() + RESTART_WAIT_SECONDS
        while True:
            try:
                actor.info = ray.get(actor.handle.describe.remote(self.device), timeout=RESTART_WAIT_SECONDS)
                break
            except restarting:  # Ray is bringing it back (max_restarts): ask again
                if time.monotonic() > deadline:
                    actor.alive = False
                    return False
                time.sleep(0.5)
            except Exception:  # noqa: BLE001 - any other failure to answer is a dead actor
                actor.alive = False
                return False
        actor.runs.clear()
        actor.restarts += 1
        return True


_POOLS: dict[tuple[Any, ...], Pool] = {}


def pool_for(settings: RaySettings, device: str) -> Pool:
    """The actors for runs of this shape; runs go one after another, so another shape's idle actors
    are stopped first (they would hold the CPUs or GPUs the new ones wait for)."""
    key = (settings.address, settings.actors, settings.cpus_per_actor, settings.gpus_per_actor,
           settings.max_restarts, device)
    if key not in _POOLS:
        close_pools()
        _POOLS[key] = Pool(settings, device)
    return _POOLS[key]


def close_pools() -> None:
    """Stop every actor this process started (their models go with them)."""
    if not _POOLS:
        return
    ray = require_ray()
    for key, pool in list(_POOLS.items()):
        for actor in pool.actors:
            with contextlib.suppress(Exception):  # an actor already gone is what we want
                ray.kill(actor.handle, no_restart=True)
        del _POOLS[key]


def actor_errors() -> tuple[type[BaseException], ...]:
    ex = require_ray().exceptions
    return tuple(getattr(ex, n) for n in ("RayActorError", "ActorUnavailableError", "WorkerCrashedError",
                                          "OutOfMemoryError", "NodeDiedError") if hasattr(ex, n))


@dataclass
class EngineSpec:
    """Everything an actor needs to build a run's HFRunner: the driver's own constructor arguments."""

    source: Any  # ModelSource
    device: str
    dtype: str
    acceleration: Accelerations
    batch_size: int | str
    prefix_reuse: bool


@dataclass
class UnitResult:
    """One unit's generations, and the engine's running totals after it (what the manifest records)."""

    generations: list[Generation]
    seconds: float
    padding: dict[str, int]
    prefix: dict[str, Any]
    batch_size: int
    oom_halvings: int
    load_seconds: float
    effects: dict[str, dict[str, Any]] = field(default_factory=dict)


class Worker:
    """One actor's state: its engines by run, and who it is (node, process, device)."""

    def __init__(self, threads: int | None = None) -> None:
        import torch

        if threads:
            torch.set_num_threads(threads)
        self.threads = torch.get_num_threads()
        self.engines: dict[str, Any] = {}  # run id -> HFRunner
        self.requests: dict[str, RunRequest] = {}  # run id -> its decoding and every item (no items, no callbacks)
        self.current: str | None = None  # the run whose engine is attached (begun) now
        self.caps: dict[str, int] = {}  # run id -> batch size after this actor's out-of-memory halvings

    def describe(self, device: str) -> dict[str, Any]:
        return {"node": socket.gethostname(), "pid": os.getpid(), "threads": self.threads,
                "device_kind": device_kind(device)}

    def register(self, run_id: str, spec: EngineSpec, request: RunRequest) -> None:
        """Make a run's engine (cheap: only the tokenizer; the model loads with the first unit)."""
        self.requests[run_id] = request
        if run_id in self.engines:
            return
        from evalrun.runners.accel import build_accelerations
        from evalrun.runners.hf.runner import HFRunner

        self.engines[run_id] = HFRunner(spec.source, spec.device, spec.dtype, build_accelerations(spec.acceleration),
                                        batch_size=spec.batch_size, prefix_reuse=spec.prefix_reuse)

    def _switch(self, run_id: str, unit: WorkUnit) -> Any:
        runner = self.engines[run_id]
        if self.current != run_id:
            if self.current is not None:
                self.engines[self.current].end()
            runner.begin(dataclasses.replace(self.requests[run_id], items=unit.items), unit.batches[0])
            self.current = run_id
        return runner

    def generate(self, run_id: str, unit: WorkUnit, batch_size: int) -> UnitResult:
        """Generate one unit with the run's engine (attached now if another run's was); `batch_size`
        is the driver's, lowered here only by this actor's own out-of-memory halvings."""
        runner = self._switch(run_id, unit)
        request = dataclasses.replace(self.requests[run_id], items=unit.items,
                                      batch_size=min(batch_size, self.caps.get(run_id, batch_size)))
        out: list[Generation] = []
        start = time.perf_counter()
        with frozen_heap():
            runner.generate_unit(unit, out.append, request)
        if runner.oom_halvings:
            self.caps[run_id] = runner.size(request)
        return UnitResult(out, time.perf_counter() - start, dataclasses.asdict(runner.padding),
                          dict(runner.prefix_stats), runner.size(request),
                          runner.oom_halvings, runner.load_seconds, runner.effects())

    def batch_size(self, run_id: str) -> int:
        """`batch_size: auto` as this actor's device resolves it (the model is loaded for it)."""
        runner = self.engines[run_id]
        runner._ensure_loaded(self.requests[run_id])
        return int(runner.batch_size)

    def release(self, run_id: str) -> None:
        """Detach and forget a run's engine (its model stays loaded for other runs of this process)."""
        if self.current == run_id:
            self.engines[run_id].end()
            self.current = None
        self.engines.pop(run_id, None)
        self.requests.pop(run_id, None)
