"""The runner a config names and the settings that runner reads: a union discriminated on `runner`.

Each runner's settings model holds its own rules (runners/hf_settings.py,
runners/openai/_settings.py); what is left here is the rule about both: a key that only the
other runner reads is a config error naming that key, not a setting silently ignored.
"""

from __future__ import annotations

from typing import Annotated, Any, Mapping, Union

from pydantic import BaseModel, Field

from evalrun.runners.config_rules import RuleBroken
from evalrun.runners.hf_settings import HFSettings
from evalrun.runners.openai import OpenAIRunnerSettings

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


__all__ = ["RunnerSettings", "SETTINGS", "foreign_keys", "own_keys"]
