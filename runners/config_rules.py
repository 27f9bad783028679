"""The runners' own rules for a config: keys that belong to another runner, what Ray and
continuous batching can run. Beside the runners' settings they check; the config loader turns
a broken rule into a ConfigError naming the file and this key path."""

from __future__ import annotations

from typing import Any

from evalrun.runners.accel import build_accelerations


class RuleBroken(ValueError):
    """A runner rule a config breaks: what is wrong, at which key path."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(f"{path}: {message}")
        self.message, self.path = message, path


def runner_keys(data: dict[str, Any]) -> None:
    """Keys that belong to the other runner are mistakes worth one clear line, not silent no-ops."""
    runner = data.get("runner", "hf")
    if runner == "openai":
        served = data.get("openai")
        if data.get("server") is not None:
            if isinstance(served, dict) and served.get("base_url") is not None:
                raise RuleBroken("evalrun launches this config's server (`server:`) on a port it picks: remove base_url "
                                 "(or server:, to use a server you started)", path="openai.base_url")
            if served is None:
                data["openai"] = {}
        elif not isinstance(served, dict) or served.get("base_url") is None:
            raise RuleBroken("runner: openai needs an `openai:` mapping with at least base_url "
                             "(e.g. openai: {base_url: http://127.0.0.1:8000/v1}), or a `server:` command that "
                             "evalrun launches", path="openai.base_url" if served else "openai")
        if data.get("acceleration"):
            raise RuleBroken("accelerations are applied by the hf runner; with runner: openai the engine applies them: "
                             "start the server with its flags (e.g. vLLM --kv-cache-dtype fp8) and record them under "
                             "engine: {name: vllm, args: [...]}", path="acceleration")
        if data.get("batching") is not None:
            raise RuleBroken("only used with runner: hf (a server batches requests its own way: record its flags "
                             "under engine:)", path="batching")
        if data.get("executor", "inprocess") != "inprocess" or data.get("ray") is not None:
            raise RuleBroken("executor: ray spreads the hf runner's batches over Ray actors; a served engine scales "
                             "itself: point openai.base_url at its data-parallel deployment or gateway and size "
                             "openai.concurrency to it",
                              path="executor" if data.get("executor", "inprocess") != "inprocess" else "ray")
    elif runner == "hf":
        for key in ("openai", "engine", "server"):
            if data.get(key) is not None:
                raise RuleBroken("only used with runner: openai (this config's runner is hf)", path=key)


def executor(executor: str, has_ray: bool, batching_mode: str) -> None:
    """`ray:` without `executor: ray` is a no-op worth a line; continuous batching packs requests into
    steps as they come, a plan the driver cannot split into units, so it runs in process only."""
    if has_ray and executor != "ray":
        raise RuleBroken("only used with executor: ray (this config's executor is inprocess)", path="ray")
    if executor == "ray" and batching_mode == "continuous":
        raise RuleBroken("batching.mode: continuous runs in process only: its steps are packed as requests "
                          "arrive, which the driver cannot split into actors' units; use batching.mode: static "
                          "with executor: ray", path="executor")


def continuous_batching(batching_mode: str, acceleration: dict[str, Any]) -> None:
    """The paged cache replaces the cache object and the `generate` call: only methods that declare
    they work without them (Capabilities.continuous_batching) run under continuous batching."""
    if batching_mode != "continuous":
        return
    for accel in build_accelerations(acceleration):
        if not accel.run_capabilities().continuous_batching:
            raise RuleBroken(f"{accel.name} cannot run with batching.mode: continuous: it supplies its own cache "
                             "object or generate arguments (or needs padded batches), which the paged cache of "
                             "continuous batching replaces; use batching.mode: static with it",
                             path=f"acceleration.{accel.name}")
