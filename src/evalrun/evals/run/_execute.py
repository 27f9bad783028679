"""Turning a config into a stored run: build items, find or resume the run directory, generate only what is
missing, record what the run did."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Protocol

from evalrun.evals.drift import teacher_force
from evalrun.evals.store import dists as dists_store
from evalrun.evals.files import jsonl
import evalrun.evals.run._memory as memory
from evalrun.evals.timing import load as speed_load
import evalrun.evals.run._manifest as rm
from evalrun.evals.files import ConfigError, StoreLink, StoreWriteFailed, store_files
from evalrun.evals.config import HFRunConfig, OpenAIRunConfig, RunConfig
from evalrun.evals.run._early_stop import EarlyStop, StopGeneration
from evalrun.evals.store import RunStore, run_key, run_lock
from evalrun.evals.results import PreparedRun, RunResult, manifest_model, openai_runner, without_secrets
from evalrun.contract.errors import RuntimeFailure
from evalrun.contract.manifest import RunManifest
from evalrun.contract.types import Generation, Item
from evalrun.runners.accel import build_accelerations
from evalrun.runners.openai import scrub_known
from evalrun.runners.base import Runner, RunRequest
from evalrun.runners import fault
from evalrun.runners.batch_plan import PLAN_KEY
from evalrun.runners.models import ModelSource, listening, resolve_device, resolve_dtype, resolve_model
from evalrun.tasks import get_pack

# Bump when the way items are turned into model input changes (chat rendering, ...).
PROMPT_FORMAT_VERSION = "1"


class RunFailed(RuntimeFailure):
    """The run as a whole could not proceed (exit 3)."""


class Progress(Protocol):
    def start(self, label: str, total: int, done: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def finish(self) -> None: ...


def key_payload(config: RunConfig, source: ModelSource, device: str, dtype: str) -> dict[str, Any]:
    """Everything that can change an output, and nothing that cannot (not the name)."""
    common = {
        "prompt_format": PROMPT_FORMAT_VERSION,
        "model": source.identity,
        "runner": config.runner,
        "generation": config.generation.model_dump(mode="json"),
        "tasks": [
            {"pack": t.pack, "version": get_pack(t.pack).version, "params": t.params.key_dump()}
            for t in config.tasks
        ],
    }
    if config.instrument is not None:  # only then, so a config without one keeps its key
        common["instrument"] = config.instrument.model_dump(mode="json")
    if isinstance(config, OpenAIRunConfig):
        # the server's identity is in `model` (served name, what /models reports, the local tokenizer);
        # where the server lives, its key, concurrency, timeouts and retries change no output
        # (a launched server's: its command, env and version, `server_launch`); extra_body only when
        # there is one, so older keys stay as they were
        extra = {"extra_body": config.openai.extra_body} if config.openai.extra_body else {}
        return common | extra | {
            "endpoint": config.openai.endpoint,
            "engine": config.engine.model_dump(mode="json") if config.engine else None,
        }
    assert isinstance(config, HFRunConfig), "a loaded config is one runner's (evals/config/_config.py AnyRunConfig)"
    # continuous batching only: a static run's key is the one it had before `batching:` existed
    paged = {"batching": config.batching.model_dump(mode="json")} if config.batching.mode == "continuous" else {}
    extras = {a.name: x for a in build_accelerations(config.acceleration) if (x := a.key_extras())}
    # methods' extra identity (a draft model's content hash), present only when some method has one
    return ({"acceleration_identity": extras} if extras else {}) | (
        {"prefix_reuse": True} if config.prefix_reuse else {}) | paged | common | {
        "device": device,
        "dtype": dtype,
        "batch_size": config.batch_size,
        "batch_plan": PLAN_KEY,  # batch composition changes outputs: a run of another plan is not reused
        "acceleration": config.acceleration.model_dump(mode="json"),
    }


def run_dir_name(name: str, key: str, replicate: int = 0) -> str:
    """Replicates (repeated runs of one key, for the A/A noise floor) live beside the first."""
    return f"{name}-{key[:12]}" + (f"-r{replicate}" if replicate else "")


def _ray_device(config: HFRunConfig) -> str:
    """The device the actors generate on: `auto` is the Ray cluster's, not the driver's."""
    from evalrun.runners.ray import RaySettings, RayUnavailable, cluster_device

    try:
        return cluster_device(config.ray or RaySettings(), config.device)
    except RayUnavailable as exc:
        raise ConfigError(str(exc), file=config.source, path="executor") from None


def _hf_runner(config: HFRunConfig) -> tuple[Runner, ModelSource, str, str]:
    from evalrun.runners.hf.runner import HFRunner

    source = resolve_model(config.model)
    device = _ray_device(config) if config.executor == "ray" else resolve_device(config.device)
    dtype = resolve_dtype(config.dtype, device)
    accelerations = build_accelerations(config.acceleration)
    for accel in accelerations:
        try:
            accel.check_device(device, dtype)
        except ValueError as exc:
            key, _, msg = str(exc).partition(": ")
            raise ConfigError(msg or key, file=config.source,
                              path=f"acceleration.{accel.name}" + (f".{key}" if msg else "")) from None
    runner = HFRunner(
        source,
        device,
        dtype,
        accelerations,
        batch_size=config.batch_size,
        prefix_reuse=config.prefix_reuse,
        batching=config.batching,
    )
    if config.executor == "ray":
        from evalrun.runners.ray import EngineSpec, RaySettings
        from evalrun.runners.ray.runner import RayRunner

        spec = EngineSpec(source, device, dtype, config.acceleration, config.batch_size, config.prefix_reuse)
        return RayRunner(runner, spec, config.ray or RaySettings()), source, device, dtype
    return runner, source, device, dtype


def prepare(config: RunConfig, out_dir: str | Path, limit: int | None = None, replicate: int = 0) -> PreparedRun:
    """Resolve the model, build the items (token lengths need the tokenizer) and the key."""
    from evalrun.tasks import BuildOptions, PackDataError

    assert isinstance(config, (HFRunConfig, OpenAIRunConfig)), "a loaded config is one runner's"
    runner, source, device, dtype = (openai_runner(config) if isinstance(config, OpenAIRunConfig)
                                     else _hf_runner(config))
    runner = fault.wrap(runner, config.instrument)
    # the limit goes to the pack, so a large data file is not tokenized past the rows used;
    # the prompt's room is the model's context less the answer (unknown for a remote server)
    context = runner.max_context()
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
    server = getattr(runner, "server", None)
    if server is not None:
        server.log_to(run_dir / "server.log", store_files.open_fd)  # the engine's output, beside its answers
    return PreparedRun(config, source, device, dtype, items, key, run_dir, runner, replicate, limit=limit)


def set_aside(run_dir: Path) -> Path | None:
    """Move a stored run out of the way (for --fresh) instead of deleting anyone's data."""
    if not run_dir.exists():
        return None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    target = run_dir.with_name(f"{run_dir.name}.replaced-{stamp}")
    run_dir.rename(target)
    return target


def _stored_manifest(store: RunStore, label: str, log: Callable[[str], None]) -> tuple[RunManifest, str | None]:
    """The stored manifest, or why it must be rebuilt: samples are never reused half-known. An unreadable one
    is kept beside the run, not deleted."""
    try:
        manifest = manifest_model(store.read_manifest(), store.manifest_path)
    except StoreLink:
        raise  # not a manifest of this run at all: never renamed, never replaced
    except ConfigError as exc:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        kept = store.manifest_path.with_name(f"{store.manifest_path.name}.unreadable-{stamp}")
        store.manifest_path.rename(kept)
        log(f"{label}: {exc}; kept as {kept.name}; manifest recreated from the config")
        return RunManifest(), f"the manifest was unreadable (kept as {kept.name})"
    if not manifest.model_fields_set and not manifest.model_extra and store.samples_path.exists():
        log(f"{label}: {store.manifest_path}: missing beside stored samples; manifest recreated from the config")
        return RunManifest(), "the manifest was missing"
    return manifest, None


def check_stored_items(store: RunStore, items: list[Item]) -> None:
    """Stored items must be the ones the config builds: a mix of edited and built gold means nothing. Compared
    in the current Item form (older lines are upgraded on reading, Item._legacy), so an older run is reused."""
    stored = {it.id: it for it in store.read_items()}
    for item in items:
        old = stored.get(item.id)
        if old is None or jsonl.canonical(old) == jsonl.canonical(item):
            continue
        mine, theirs = item.model_dump(mode="json"), old.model_dump(mode="json")
        what = ", ".join(k for k in mine if mine[k] != theirs.get(k))
        raise ConfigError(
            f"item {item.id!r} differs from the item the config builds ({what}): the file was edited after "
            "the run, or the pack or tokenizer changed; refusing to score a mix (restore the file, or move "
            "the run aside with --fresh)", file=store.items_path)


def execute(prepared: PreparedRun, progress: Progress | None = None, log: Callable[[str], None] = print,
            watch: EarlyStop | None = None) -> RunResult:
    """Generate whatever the run directory does not hold yet, then record the manifest. The lock is held
    throughout, so each item is generated once; with `watch`, generation stops once the FAIL is decided."""
    store = RunStore(prepared.dir, log=log)
    with run_lock(prepared.dir, log, prepared.label) as waited:
        result = _execute_locked(prepared, store, progress, log, waited, watch)
    result.limit = prepared.limit  # what this command asked, whatever the directory holds beyond it
    return result


def _reuse(prepared: PreparedRun, store: RunStore, manifest: RunManifest, recreated: str | None,
           done: dict[str, Generation], items_hash: str, log: Callable[[str], None]) -> RunResult:
    """Every item is stored: nothing to generate; a rebuilt or older manifest is brought up to date."""
    wanted = {it.id for it in prepared.items}
    if recreated:
        manifest = rm.rebuilt(prepared, [done[k] for k in wanted], recreated).merged({"items_sha256": items_hash})
        store.write_manifest(manifest)
    elif manifest.items_sha256 != items_hash or manifest.status == "stopped" or (
            prepared.limit is None and manifest.limit is not None):
        # an older run: record what its items are from now on; a stopped one that has every item is complete;
        # one stored with --limit that holds the whole plan now is no longer limited
        updates: dict[str, Any] = {"items_sha256": items_hash}
        if prepared.limit is None:
            updates["limit"] = None
        if manifest.status == "stopped":
            updates["status"] = "complete"
        manifest = manifest.merged(updates, drop=("early_stop",))
        store.write_manifest(manifest)
    log(f"{prepared.label}: reusing stored run {prepared.dir} ({len(wanted)} items, key {prepared.key[:12]})")
    return RunResult(prepared.label, prepared.dir, prepared.items, {it.id: done[it.id] for it in prepared.items},
                     manifest, True, 0, store.warnings)


class _Emitter:
    """Stores each generation as the runner hands it over; with a watch, raises StopGeneration at
    the end of the batch in which the FAIL became decided (its other items are generated already)."""

    def __init__(self, store: RunStore, done: dict[str, Generation], progress: Progress | None,
                 watch: EarlyStop | None) -> None:
        self.store, self.done, self.progress, self.watch = store, done, progress, watch
        self.generated = self.errors = 0
        self.decided = False
        self.in_batch = 0

    def __call__(self, gen: Generation) -> None:
        gen = without_secrets(gen)  # an answer echoing a secret is stored masked
        self.store.append(gen)
        self.done[gen.item_id] = gen
        self.generated += 1
        self.errors += gen.error is not None
        if self.progress:
            self.progress.advance(1)
        if self.watch is not None and self.watch.observe(gen):
            self.decided = True
        self.in_batch += 1
        if self.in_batch >= max(1, gen.batch_size):
            self.in_batch = 0
            if self.decided:
                raise StopGeneration()


def _early_stop_record(prepared: PreparedRun, watch: EarlyStop | None, stored: int, wanted: int, elapsed: float,
                       generated: int, log: Callable[[str], None]) -> dict[str, Any]:
    assert watch is not None
    saved = round((wanted - stored) * elapsed / max(generated, 1), 1)
    log(f"{prepared.label}: stopped at {stored} of {wanted} items: FAIL decided ({'; '.join(watch.decided())}); "
        f"about {saved:.0f} s of generation saved (--no-early-stop runs to the end)")
    return {"early_stop": {"at": stored, "of": wanted, "rules": watch.decided(), "seconds_saved": saved}}


def _stored_partial(prepared: PreparedRun, store: RunStore, manifest: RunManifest, done: dict[str, Generation],
                    items_hash: str) -> RunResult:
    """A stopped run whose stored items still decide its FAIL: reused as it is."""
    if manifest.items_sha256 != items_hash:
        manifest = manifest.merged({"items_sha256": items_hash})
        store.write_manifest(manifest)
    kept = {it.id: done[it.id] for it in prepared.items if it.id in done}
    return RunResult(prepared.label, prepared.dir, prepared.items, kept, manifest, True, 0, store.warnings)


def _failed_session(prepared: PreparedRun, store: RunStore, manifest: RunManifest, exc: Exception, stored: int,
                    generated: int) -> Exception:
    """Record a session that failed (on a full disk too: never left `running`); what to raise for it."""
    unrecorded = "" if store.write_failed_manifest(manifest) else \
        f"; {store.manifest_path} could not be updated either: it still says `running`"
    wanted = len({it.id for it in prepared.items})
    if isinstance(exc, StoreLink):
        return exc
    if isinstance(exc, StoreWriteFailed):
        return RunFailed(f"{prepared.label}: {exc.text(f'{stored} of {wanted} items are stored')}{unrecorded}")
    kept = f" ({stored} of {wanted} items are stored; the same command resumes)" if generated else ""
    return RunFailed(f"{prepared.label}: {exc}{kept}{unrecorded}")


def _request(prepared: PreparedRun, items: list[Item]) -> RunRequest:
    """With the distributions' sink and the forced record of answers equal to a watched baseline's (--drift)."""
    with_sink: RunRequest = dists_store.attach(prepared.request(items, **teacher_force.watch_of(prepared.dir)),
                                               prepared.dir)
    return with_sink


def _generate(prepared: PreparedRun, missing: list[Item], emit: _Emitter, watch: EarlyStop | None) -> None:
    """With a watch, the canary's items (EarlyStop.canary) in a run of their own first: a runner's batch plan
    regroups what it is handed. A launched engine stays up for both runs (`serving`), launched once."""
    with prepared.runner.serving():
        for part in watch.canary(missing) if watch is not None and watch.collapse else [missing]:
            prepared.runner.run(_request(prepared, part), emit)
            if emit.decided:
                raise StopGeneration()


def _execute_locked(prepared: PreparedRun, store: RunStore, progress: Progress | None,
                    log: Callable[[str], None], waited: bool, watch: EarlyStop | None = None) -> RunResult:
    started_at = rm.now()
    manifest, recreated = _stored_manifest(store, prepared.label, log)
    check_stored_items(store, prepared.items)
    items_hash = store.write_items(prepared.items)
    done = store.read_samples(repair=True)
    wanted = {it.id for it in prepared.items}
    missing = [it for it in prepared.items if it.id not in done]
    if not missing:
        return _reuse(prepared, store, manifest, recreated, done, items_hash, log)
    if watch is not None and any([watch.observe(done[it.id]) for it in prepared.items if it.id in done]):
        log(f"{prepared.label}: the stored items already decide a FAIL ({'; '.join(watch.decided())}): "
            f"not generating the other {len(missing)} (--no-early-stop runs them)")
        return _stored_partial(prepared, store, manifest, done, items_hash)
    if done:
        log(f"{prepared.label}: resuming {prepared.dir}: {len(wanted) - len(missing)} of {len(wanted)} items stored")

    runner = prepared.runner
    if recreated:
        manifest = manifest.merged({"manifest_recreated": {
            "at": rm.now(), "reason": recreated, "note": "earlier sessions, effects and load times are unknown"}})
    manifest = manifest.merged(rm.describe(prepared, manifest) | {
        "status": "running", "created": manifest.created or rm.now(), "updated": rm.now(), "items_sha256": items_hash}
        | fault.record(runner, manifest.instrument))
    store.write_manifest(manifest)

    emit = _Emitter(store, done, progress, watch)
    if progress:
        progress.start(prepared.label, len(wanted), len(wanted) - len(missing))
    started, load_at_start = time.perf_counter(), speed_load.snapshot()
    peak_reset, stopped = memory.reset_peak(prepared.device), False
    try:
        with listening(getattr(progress, "note", None)):  # a first-use compile is said in the progress line
            _generate(prepared, missing, emit, watch)
    except StopGeneration:
        stopped = True
    except Exception as exc:
        failure = _failed_session(prepared, store, manifest.with_session(
            rm.session_entry(started_at, emit.generated, emit.errors, time.perf_counter() - started, waited, "failed",
                             speed_load.measured(load_at_start, speed_load.snapshot())),
            rm.runner_extras(runner, manifest.server) | fault.record(runner, manifest.instrument) | {
                "status": "failed", "failure": scrub_known(f"{type(exc).__name__}: {exc}"), "updated": rm.now()}),
            exc, sum(1 for k in wanted if k in done), emit.generated)
        if failure is exc:
            raise
        raise failure from exc
    finally:
        if progress:
            progress.finish()
    elapsed, machine = time.perf_counter() - started, speed_load.measured(load_at_start, speed_load.snapshot())
    stored = [done[k] for k in wanted if k in done]
    stopped = stopped and len(stored) < len(wanted)  # a stop after the last batch is a complete run
    all_errors = sum(1 for g in stored if g.error is not None)
    effects = runner.effects()
    record = _early_stop_record(prepared, watch, len(stored), len(wanted), elapsed, emit.generated, log) \
        if stopped else {}
    manifest = manifest.merged(rm.runner_extras(runner, manifest.server) | fault.record(runner, manifest.instrument),
                               drop=("failure", "early_stop")).with_session(
        rm.session_entry(started_at, emit.generated, emit.errors, elapsed, waited, "stopped" if stopped else "complete",
                         machine),
        {
            "status": "stopped" if stopped else "complete",
            "updated": rm.now(),
            "items_total": len(wanted),
            "load_seconds": round(runner.load_seconds, 3),
            "effects": effects,
            "speed": rm.run_speed(prepared, stored, runner, effects, peak_reset),
            "logprobs": dists_store.summary(prepared.dir),
        } | rm.outcome(prepared.label, stored, log) | record)
    store.write_manifest(manifest)
    if all_errors == len(wanted) and not stopped:
        first = next(iter(done[k].error for k in wanted))
        raise RunFailed(f"{prepared.label}: every item failed; first error: {first}")
    in_order = {it.id: done[it.id] for it in prepared.items if it.id in done}  # not a set's (hash-seeded) order
    return RunResult(prepared.label, prepared.dir, prepared.items, in_order, manifest, False, emit.generated,
                     store.warnings)
