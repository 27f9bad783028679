"""The `compile` method: the model's forward pass through `torch.compile`.

A compiled graph fuses and reorders floating-point work, so greedy outputs can change (transformers' own
compiled-logit checks fail at tolerance 0.1). transformers compiles only the decode step and only on
accelerators, so this method compiles `model.forward` itself on any device and turns transformers' compile
off. Compiling is paid in an untimed warm-up batch (`Capabilities.warmup`), reported apart; what dynamo still
compiles inside the timed generations (a new prompt length or batch size) and the frames it gave up on are
counted.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import ValidationInfo, field_validator

from evalrun.runners.accel.base import AccelSettings, Acceleration, Capabilities


class CompileSettings(AccelSettings):
    backend: Literal["inductor", "aot_eager", "eager"] = "inductor"
    mode: Literal["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"] = "default"
    dynamic: bool | None = None  # torch.compile's: None marks a dimension dynamic once it has changed
    fullgraph: bool = False
    cache: Literal["dynamic", "static"] = "dynamic"

    @field_validator("mode")
    @classmethod
    def _mode_needs_inductor(cls, value: str, info: ValidationInfo) -> str:
        backend = info.data.get("backend")
        if value != "default" and backend != "inductor":
            raise ValueError(f"mode {value} is an inductor setting; backend {backend} takes only mode default")
        return value


def _dynamo_state() -> dict[str, float]:
    """What dynamo has compiled so far in this process (its counters only grow; reset clears the times)."""
    from torch._dynamo.utils import compilation_time_metrics, counters

    return {"frames": counters["frames"]["total"], "frames_ok": counters["frames"]["ok"],
            "graphs": counters["stats"]["unique_graphs"], "graph_breaks": sum(counters["graph_break"].values()),
            "compile_seconds": sum(compilation_time_metrics.get("_compile.compile_inner", []))}


# the (model, settings) whose compiled code dynamo holds: a run with the same pair reuses it (an
# interleaved re-timing runs the runner once per batch); any other run starts from a reset
_COMPILED_FOR: list[tuple[int, str]] = []


def _delta(later: dict[str, float], earlier: dict[str, float]) -> dict[str, float]:
    return {k: later[k] - earlier[k] for k in later}


class Compile(Acceleration):
    name: ClassVar[str] = "compile"
    settings_model: ClassVar[type[AccelSettings]] = CompileSettings
    # compiles in an untimed warm-up; a static cache is its own cache object, so no shared prefix then
    capabilities: ClassVar[Capabilities] = Capabilities(warmup=True, prefix_reuse=False)
    headline_keys: ClassVar[tuple[str, ...]] = ("graphs_compiled", "compile_seconds", "recompilations",
                                                "frames_not_compiled")
    label_keys: ClassVar[tuple[str, ...]] = ("backend", "mode", "cache")
    # each worker compiles for itself: the compile work (and its seconds) of the run is their sum
    effect_counters: ClassVar[frozenset[str]] = frozenset({
        "generate_calls", "graphs_compiled", "frames_compiled", "frames_not_compiled", "graph_breaks",
        "recompilations", "warmup_seconds", "compile_seconds", "timed_compile_seconds"})
    # aot_eager traces what inductor would compile, in seconds rather than minutes (contract tests)
    examples: ClassVar[tuple[dict[str, Any], ...]] = ({"backend": "aot_eager", "cache": "static"},)
    description: ClassVar[str] = ("torch.compile of the forward pass (backend inductor, aot_eager or eager; any "
                                  "device), cache dynamic or static; compile time measured in an untimed warm-up")

    def __init__(self, settings: CompileSettings):
        super().__init__(settings)
        self.settings: CompileSettings = settings
        self._own_forward: Any = None  # an instance-level forward found at attach, put back at detach
        self._attached = False
        self._start: dict[str, float] | None = None
        self._warm: dict[str, float] | None = None
        self._end: dict[str, float] | None = None
        self._warmup_seconds: float | None = None
        self._generate_calls = 0

    def run_capabilities(self) -> Capabilities:
        return self.capabilities if self.settings.cache == "static" else Capabilities(warmup=True)

    def check_device(self, device: str, dtype: str) -> None:
        if self.settings.mode == "reduce-overhead" and device != "cuda":
            raise ValueError(f"mode: reduce-overhead is CUDA graphs, which need a CUDA device (this run's device "
                             f"is {device}); on the CPU use mode default or max-autotune-no-cudagraphs")

    def attach(self, model: Any) -> None:
        import torch

        s = self.settings
        ident = (id(model), s.model_dump_json())
        if _COMPILED_FOR != [ident]:
            # a clean slate: what this run compiles is its own, and no other run's cache entries
            # count toward dynamo's per-function recompile limit
            torch._dynamo.reset()
            _COMPILED_FOR[:] = [ident]
        self._start, self._warm, self._end, self._warmup_seconds = _dynamo_state(), None, None, None
        self._generate_calls = 0  # effects describe the latest run
        self._own_forward = vars(model).get("forward")
        mode = s.mode if s.backend == "inductor" else None
        model.forward = torch.compile(model.forward, backend=s.backend, mode=mode, dynamic=s.dynamic,
                                      fullgraph=s.fullgraph)
        self._attached = True

    def warmed_up(self, seconds: float) -> None:
        self._warmup_seconds = seconds
        self._warm = _dynamo_state()

    def detach(self, model: Any) -> None:
        """The model's own forward back; dynamo keeps the compiled code (keyed by the forward's
        code, run only through a compiled call) for a next run with the same settings."""
        if not self._attached:
            return
        self._end = _dynamo_state()
        if self._own_forward is not None:
            model.forward = self._own_forward
        else:
            del model.forward
        self._attached = False

    def generate_kwargs(self, model: Any, batch_size: int) -> dict[str, Any]:
        # transformers would compile its own call again on accelerators with a static cache
        kwargs: dict[str, Any] = {"disable_compile": True}
        if self.settings.cache == "static":
            kwargs["cache_implementation"] = "static"
        return kwargs

    def observe(self, model: Any, outputs: Any) -> None:
        self._generate_calls += 1

    def effects(self) -> dict[str, Any]:
        s = self.settings
        out: dict[str, Any] = {"backend": s.backend, "mode": s.mode, "dynamic": s.dynamic, "fullgraph": s.fullgraph,
                               "cache": s.cache, "generate_calls": self._generate_calls}
        if self._start is None:
            return out
        end = self._end or _dynamo_state()
        total = _delta(end, self._start)
        timed = _delta(end, self._warm) if self._warm is not None else total
        out.update({
            "compiled": True,
            "graphs_compiled": int(total["graphs"]),
            "frames_compiled": int(total["frames_ok"]),
            # frames dynamo gave up on (recompile limit, unsupported code): they ran uncompiled
            "frames_not_compiled": int(total["frames"] - total["frames_ok"]),
            "graph_breaks": int(total["graph_breaks"]),
            # the untimed warm-up batch (compiling and one generation), and dynamo's compile time in it
            "warmup_seconds": round(self._warmup_seconds, 4) if self._warmup_seconds is not None else None,
            "compile_seconds": (round(self._warm["compile_seconds"] - self._start["compile_seconds"], 4)
                                if self._warm is not None else None),
            # what still compiled inside the timed generations (a new shape), and its cost
            "recompilations": int(timed["frames"]),
            "timed_compile_seconds": round(timed["compile_seconds"], 4),
        })
        return out
