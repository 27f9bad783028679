"""What runs inside one Ray actor: an HFRunner per run, generating the units the driver plans.

The actor loads each model once (runners/models/_models.py caches loads per process) and
keeps one engine (an HFRunner with its accelerations) per run it serves; the
engine in use stays attached between units, so a method's hooks and calibration
are paid once per run, not per batch. The actor never writes the run store: it
returns generations, and the driver (runners/ray/executor.py) stores them.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from evalrun.contract.types import Generation
from evalrun.runners.accel.accelerations import Accelerations
from evalrun.runners.base import RunRequest, frozen_heap
from evalrun.runners.batch_plan import WorkUnit
from evalrun.runners.models import device_kind


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


__all__ = ["EngineSpec", "UnitResult", "Worker"]
