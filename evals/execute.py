"""Turning a config into a stored run: build items, find or resume the run
directory, generate only what is missing, record what the run did.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Protocol

import evals
from evals import memory, speed
from evals.config import ConfigError, RunConfig
from evals.store import RunStore, run_key
from evals.types import Generation, Item
from runners.accel import all_methods, build_accelerations
from runners.models import ModelSource, resolve_device, resolve_dtype, resolve_model
from tasks import get_pack

# Bump when the way items are turned into model input changes (chat rendering, ...).
PROMPT_FORMAT_VERSION = "1"


class RunFailed(Exception):
    """The run as a whole could not proceed (exit 3)."""


class Progress(Protocol):
    def start(self, label: str, total: int, done: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def finish(self) -> None: ...


@dataclass
class PreparedRun:
    """A config resolved to its items, its cache key and its directory."""

    config: RunConfig
    source: ModelSource
    device: str
    dtype: str
    items: list[Item]
    key: str
    dir: Path
    runner: Any = field(repr=False, default=None)
    replicate: int = 0

    @property
    def store(self) -> RunStore:
        return RunStore(self.dir)

    @property
    def label(self) -> str:
        """The config's name, marked with the replicate for repeated runs (A/A)."""
        return self.config.name + (f"~r{self.replicate}" if self.replicate else "")


@dataclass
class RunResult:
    """A stored run as the later stages see it; built by `execute` or read back from disk."""

    name: str
    dir: Path
    items: list[Item]
    generations: dict[str, Generation]
    manifest: dict[str, Any]
    reused: bool = True
    generated: int = 0

    @classmethod
    def load(cls, run_dir: str | Path) -> "RunResult":
        """Read a run directory (no model): its items, generations and manifest."""
        store = RunStore(run_dir)
        manifest = store.read_manifest()
        replicate = manifest.get("replicate") or 0
        name = str(manifest.get("name", store.dir.name)) + (f"~r{replicate}" if replicate else "")
        items = store.read_items()
        generations = store.read_samples()
        return cls(name, store.dir, items, {k: v for k, v in generations.items()}, manifest)


def _versions() -> dict[str, str]:
    import torch
    import transformers

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "evalrun": evals.__version__,
    }


def key_payload(config: RunConfig, source: ModelSource, device: str, dtype: str) -> dict[str, Any]:
    """Everything that can change an output, and nothing that cannot (not the name)."""
    common = {
        "prompt_format": PROMPT_FORMAT_VERSION,
        "model": source.identity,
        "runner": config.runner,
        "generation": config.generation.model_dump(mode="json"),
        "tasks": [
            {"pack": t.pack, "version": get_pack(t.pack).version, "params": t.params.model_dump(mode="json")}
            for t in config.tasks
        ],
    }
    if config.runner == "openai":
        # the server's identity is in `model` (served name, what /models reports, the local tokenizer);
        # where the server lives, its key, concurrency, timeouts and retries change no output
        assert config.openai is not None
        return common | {
            "endpoint": config.openai.endpoint,
            "engine": config.engine.model_dump(mode="json") if config.engine else None,
        }
    extras = {a.name: x for a in build_accelerations(config.acceleration) if (x := a.key_extras())}
    # methods' extra identity (a draft model's content hash), present only when some method has one
    return ({"acceleration_identity": extras} if extras else {}) | (
        {"prefix_reuse": True} if config.prefix_reuse else {}) | common | {
        "device": device,
        "dtype": dtype,
        "batch_size": config.batch_size,
        "acceleration": config.acceleration,
    }


def run_dir_name(name: str, key: str, replicate: int = 0) -> str:
    """Replicates (repeated runs of one key, for the A/A noise floor) live beside the first."""
    return f"{name}-{key[:12]}" + (f"-r{replicate}" if replicate else "")


def _hf_runner(config: RunConfig) -> tuple[Any, ModelSource, str, str]:
    from runners.hf import HFRunner

    source = resolve_model(config.model)
    device = resolve_device(config.device)
    dtype = resolve_dtype(config.dtype, device)
    runner = HFRunner(
        source,
        device,
        dtype,
        config.generation.model_dump(),
        build_accelerations(config.acceleration),
        batch_size=config.batch_size,
        prefix_reuse=config.prefix_reuse,
    )
    return runner, source, device, dtype


def _openai_runner(config: RunConfig) -> tuple[Any, ModelSource, str, str]:
    """A runner for a remote server; its identity is what the server reports plus the local tokenizer's."""
    from runners.models import ModelNotFound
    from runners.openai import OpenAIRunner, api_key_from_env

    settings = config.openai
    assert settings is not None
    tok_spec = settings.tokenizer or config.model
    try:
        tok_source = resolve_model(tok_spec)
    except ModelNotFound as exc:
        hint = "" if settings.tokenizer else (
            f"; the tokenizer defaults to `model` ({config.model!r}): set openai.tokenizer to a local model "
            "directory, .gguf file, alias or hub id with the served model's tokenizer")
        raise ConfigError(f"{exc}{hint}", file=config.source,
                          path="openai.tokenizer" if settings.tokenizer else "model") from None
    try:
        api_key = api_key_from_env(settings)
    except KeyError:
        raise ConfigError(f"environment variable {settings.api_key_env} is not set (it should hold the API key)",
                          file=config.source, path="openai.api_key_env") from None
    runner = OpenAIRunner(settings, config.model, config.generation.model_dump(), tok_source, api_key)
    runner.probe()
    source = ModelSource(
        config.model,
        "openai",
        settings.base_url,
        {"served_model": config.model, "server_reported": runner.server_identity(), "tokenizer": tok_source.identity},
    )
    return runner, source, "remote", "server"


def prepare(config: RunConfig, out_dir: str | Path, limit: int | None = None, replicate: int = 0) -> PreparedRun:
    """Resolve the model, build the items (token lengths need the tokenizer) and the key."""
    from tasks import BuildOptions, PackDataError

    runner, source, device, dtype = (_openai_runner if config.runner == "openai" else _hf_runner)(config)
    # the limit goes to the pack, so a large data file is not tokenized past the rows used;
    # the prompt's room is the model's context less the answer (unknown for a remote server)
    context = getattr(runner, "max_context", None)
    context = context() if callable(context) else context
    answer = config.generation.max_new_tokens
    options = BuildOptions(limit=limit, max_prompt_tokens=(context - answer) if context else None)
    items: list[Item] = []
    for i, task in enumerate(config.tasks):
        try:
            items.extend(get_pack(task.pack).items(task.params, runner.count_tokens, options))
        except PackDataError as exc:
            note = f" (model context {context} tokens less max_new_tokens {answer})" if context else ""
            raise ConfigError(exc.message + note, file=config.source,
                              path=f"tasks[{i}]" + (f".{exc.key}" if exc.key else "")) from None
    key = run_key(key_payload(config, source, device, dtype))
    run_dir = Path(out_dir) / run_dir_name(config.name, key, replicate)
    return PreparedRun(config, source, device, dtype, items, key, run_dir, runner, replicate)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def set_aside(run_dir: Path) -> Path | None:
    """Move a stored run out of the way (for --fresh) instead of deleting anyone's data."""
    if not run_dir.exists():
        return None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    target = run_dir.with_name(f"{run_dir.name}.replaced-{stamp}")
    run_dir.rename(target)
    return target


def _runner_extras(runner: Any) -> dict[str, Any]:
    """What a runner reports about itself beyond accelerations (a remote server's answers, retries)."""
    extras = getattr(runner, "manifest_extras", None)
    return extras() if callable(extras) else {}


def _speed(prepared: PreparedRun, generations: list[Generation], runner: Any, effects: dict[str, Any],
           peak_reset: bool, session: tuple[int, float]) -> dict[str, Any]:
    """The run's speed figures over all its generations (resumed sessions included); the
    peak memory is this session's. A remote server's requests overlap, so its throughput is
    the session's wall clock when the session generated every item."""
    model = getattr(runner, "model", None)
    dtype = getattr(model, "dtype", None)
    element_size = dtype.itemsize if dtype is not None and hasattr(dtype, "itemsize") else None
    kv = speed.kv_cache_figures(getattr(model, "config", None), element_size, effects,
                                speed.longest_context(generations))
    remote = prepared.device == "remote"
    figures = speed.run_speed(generations, load_seconds=round(getattr(runner, "load_seconds", 0.0), 3),
                              peak_memory=None if remote else memory.read_peak(prepared.device, peak_reset),
                              kv_cache=kv)
    generated, wall = session
    if remote and generated == len(generations) and wall > 0:
        ok = [g for g in generations if g.error is None]
        figures.update({"generation_seconds": round(wall, 6), "items_per_second": len(ok) / wall,
                        "tokens_per_second": sum(g.new_tokens for g in ok) / wall,
                        "throughput_basis": "wall clock of concurrent requests"})
    return figures


def execute(prepared: PreparedRun, progress: Progress | None = None, log: Callable[[str], None] = print) -> RunResult:
    """Generate whatever the run directory does not hold yet, then record the manifest."""
    store = prepared.store
    store.write_items(prepared.items)
    done = store.read_samples(repair=True)
    wanted = {it.id for it in prepared.items}
    missing = [it for it in prepared.items if it.id not in done]
    manifest = store.read_manifest()
    config = prepared.config
    if not missing:
        log(f"{prepared.label}: reusing stored run {prepared.dir} ({len(wanted)} items, key {prepared.key[:12]})")
        return RunResult(prepared.label, prepared.dir, prepared.items, {k: v for k, v in done.items() if k in wanted},
                         manifest, True, 0)
    if done:
        log(f"{prepared.label}: resuming {prepared.dir}: {len(wanted) - len(missing)} of {len(wanted)} items stored")

    runner = prepared.runner
    runner.run_items = prepared.items
    methods = all_methods()
    manifest.update(
        {
            "name": config.name,
            "replicate": prepared.replicate,
            "key": prepared.key,
            "config_file": config.source,
            "config": config.model_dump(mode="json", exclude={"source", "tasks"}) | {"tasks": config.tasks_dump()},
            "model": {"spec": prepared.source.spec, "kind": prepared.source.kind,
                      "location": prepared.source.location, "identity": prepared.source.identity},
            "runner": config.runner,
            "device": prepared.device,
            "dtype": prepared.dtype,
            "versions": _versions(),
            "packs": [
                {"pack": t.pack, "version": get_pack(t.pack).version, "params": t.params.model_dump(mode="json")}
                for t in config.tasks
            ],
            "emulated": sorted(n for n in config.acceleration if methods[n].emulated),
            "status": "running",
            "created": manifest.get("created", _now()),
            "updated": _now(),
        }
    )
    store.write_manifest(manifest)

    generated = 0
    errors = 0
    if progress:
        progress.start(prepared.label, len(wanted), len(wanted) - len(missing))

    def emit(gen: Generation) -> None:
        nonlocal generated, errors
        store.append(gen)
        done[gen.item_id] = gen
        generated += 1
        errors += gen.error is not None
        if progress:
            progress.advance(1)

    started = time.perf_counter()
    peak_reset = memory.reset_peak(prepared.device)
    try:
        runner.run(missing, emit)
    except Exception as exc:
        manifest.update(_runner_extras(runner))
        manifest.update({"status": "failed", "failure": f"{type(exc).__name__}: {exc}", "updated": _now()})
        store.write_manifest(manifest)
        stored = sum(1 for k in wanted if k in done)
        kept = f" ({stored} of {len(wanted)} items are stored; the same command resumes)" if generated else ""
        raise RunFailed(f"{prepared.label}: {exc}{kept}") from exc
    finally:
        if progress:
            progress.finish()
    all_errors = sum(1 for k in wanted if done[k].error is not None)
    manifest.update(_runner_extras(runner))
    manifest.pop("failure", None)
    effects = {a.name: a.effects() for a in runner.accelerations}
    manifest.update(
        {
            "status": "complete",
            "updated": _now(),
            "items_total": len(wanted),
            "items_error": all_errors,
            "load_seconds": round(runner.load_seconds, 3),
            "effects": effects,
            "speed": _speed(prepared, [done[k] for k in wanted], runner, effects, peak_reset,
                            (generated, time.perf_counter() - started)),
        }
    )
    manifest.setdefault("sessions", []).append(
        {"finished": _now(), "generated": generated, "errors": errors, "seconds": round(time.perf_counter() - started, 3)}
    )
    store.write_manifest(manifest)
    if all_errors == len(wanted):
        first = next(iter(done[k].error for k in wanted))
        raise RunFailed(f"{prepared.label}: every item failed; first error: {first}")
    return RunResult(prepared.label, prepared.dir, prepared.items, {k: done[k] for k in wanted}, manifest, False,
                     generated)
