"""The runner a config names and the settings that runner reads: a union discriminated on `runner`.

The keys stay at the top level of a config file; `HFSettings` (here) and `OpenAIRunnerSettings`
(runners/openai/_settings.py) hold their own rules. The union's rule is about both: a key that only the other runner
reads is a config error naming that key, not a setting silently ignored."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalrun.runners.accel.accelerations import Accelerations, build_accelerations
from evalrun.runners.config_rules import RuleBroken
from evalrun.runners.hf import BatchingSettings
from evalrun.runners.openai import OpenAIRunnerSettings
from evalrun.runners.ray import RaySettings


class HFSettings(BaseModel):
    """`runner: hf`: where and how the model generates in process (or on Ray actors)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    runner: Literal["hf"] = "hf"
    device: Literal["auto", "cpu", "cuda"] = "auto"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    # "auto": the largest batch that fits (estimated from free accelerator memory; 8 on the CPU),
    # halved on out-of-memory with the batch retried, so nothing is lost
    batch_size: int | Literal["auto"] = 4
    # compute a document's KV once for all the questions asked about it (items
    # with the same `context`); off by default: it changes the batch shapes
    prefix_reuse: bool = False
    # static batches, or continuous batching over a paged KV cache (runners/hf/_continuous.py)
    batching: BatchingSettings = Field(default_factory=BatchingSettings)
    # where the batches are generated: in this process, or spread over Ray actors
    # (runners/ray/executor.py); the same batches either way, so not part of the run key
    executor: Literal["inprocess", "ray"] = "inprocess"
    ray: RaySettings | None = None
    acceleration: Accelerations = Field(default_factory=Accelerations.none)

    @field_validator("batch_size", mode="before")
    @classmethod
    def _batch_size(cls, value: Any) -> Any:
        if value == "auto":
            return value
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1024:
            raise ValueError(f"must be an integer from 1 to 1024 or 'auto' (got {value!r})")
        return value

    @model_validator(mode="after")
    def _runs_as_configured(self) -> HFSettings:
        """The paged cache replaces the cache object and the `generate` call: only methods that declare
        they work without them (Capabilities.continuous_batching) run under continuous batching.
        `ray:` without `executor: ray` is a no-op worth a line; continuous batching packs requests into
        steps as they come, a plan the driver cannot split into units, so it runs in process only."""
        if self.batching.mode == "continuous":
            for accel in build_accelerations(self.acceleration):
                if not accel.run_capabilities().continuous_batching:
                    raise RuleBroken(f"{accel.name} cannot run with batching.mode: continuous: it supplies its own "
                                     "cache object or generate arguments (or needs padded batches), which the paged "
                                     "cache of continuous batching replaces; use batching.mode: static with it",
                                     path=f"acceleration.{accel.name}")
        if self.ray is not None and self.executor != "ray":
            raise RuleBroken("only used with executor: ray (this config's executor is inprocess)", path="ray")
        if self.executor == "ray" and self.batching.mode == "continuous":
            raise RuleBroken("batching.mode: continuous runs in process only: its steps are packed as requests "
                             "arrive, which the driver cannot split into actors' units; use batching.mode: static "
                             "with executor: ray", path="executor")
        return self


RunnerSettings = Annotated[Union[HFSettings, OpenAIRunnerSettings], Field(discriminator="runner")]

# runner name -> its settings model (the union's members, by their `runner` literal)
SETTINGS: dict[str, type[BaseModel]] = {"hf": HFSettings, "openai": OpenAIRunnerSettings}

# why an hf-only key means nothing to a served engine, where there is more to say than that
_SERVED: dict[str, str] = {
    "acceleration": "accelerations are applied by the hf runner; with runner: openai the engine applies them: "
                    "start the server with its flags (e.g. vLLM --kv-cache-dtype fp8) and record them under "
                    "engine: {name: vllm, args: [...]}",
    "batching": "only used with runner: hf (a server batches requests its own way: record its flags under engine:)",
    "executor": "executor: ray spreads the hf runner's batches over Ray actors; a served engine scales itself: point "
                "openai.base_url at its data-parallel deployment or gateway and size openai.concurrency to it",
}
_SERVED["ray"] = _SERVED["executor"]


def own_keys(runner: str) -> set[str]:
    """The top-level config keys only this runner reads."""
    mine = set(SETTINGS[runner].model_fields)
    return mine - {k for name, model in SETTINGS.items() if name != runner for k in model.model_fields}


def foreign_keys(data: Mapping[str, Any]) -> dict[str, Any]:
    """The config mapping without the other runner's keys that say nothing (null, an empty
    `acceleration`, `executor: inprocess`, the default); RuleBroken at the first one that says
    something (in the order its runner's settings list them), which this runner would ignore."""
    runner = data.get("runner", "hf")
    if not isinstance(runner, str) or runner not in SETTINGS:
        return dict(data)  # the config's own validation names the runners
    out = dict(data)
    for other in (name for name in SETTINGS if name != runner):
        theirs = own_keys(other)
        said = _SERVED if other == "hf" else {}
        # the keys with more to say than "only used with" first, then in the order the settings list them
        for key in dict.fromkeys(k for k in (*said, *SETTINGS[other].model_fields) if k in theirs and k in data):
            value = data[key]
            if value is None or (key == "acceleration" and not value) or (key == "executor" and value == "inprocess"):
                del out[key]
                continue
            raise RuleBroken(said.get(key, f"only used with runner: {other} (this config's runner is {runner})"),
                             path=key)
    return out
