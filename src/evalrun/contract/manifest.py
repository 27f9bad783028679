"""The run manifest (`manifest.json`), typed and versioned; every section keeps keys it does not know, so an older
evalrun rewriting a newer manifest loses nothing (versions: docs/run-store.md). `manifest["key"]` reads it as written
(its JSON form), for scripts and tests that think of it as the file."""

from __future__ import annotations

from typing import Any, Union

from pydantic import BaseModel, ConfigDict, Field as PydField

SCHEMA_VERSION = 3
# an effect value as a method reports it: a ratio, a count, a level name, a flag
Scalar = Union[bool, int, float, str, None]


class _Open(BaseModel):
    """A manifest section: known fields typed, unknown ones kept as they are."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, protected_namespaces=())


class ModelIdentity(_Open):
    """Which model ran: the config's spelling, where it was found, and its content identity."""

    spec: str | None = None
    kind: str | None = None
    location: str | None = None
    identity: dict[str, Any] = PydField(default_factory=dict)


class Versions(_Open):
    python: str | None = None
    torch: str | None = None
    transformers: str | None = None
    evalrun: str | None = None


class PackRecord(_Open):
    pack: str
    version: Scalar = None
    params: dict[str, Any] = PydField(default_factory=dict)


class ConfigRecord(_Open):
    """The resolved config as the run recorded it (evals.config validates it when it is used)."""

    model: str | None = None
    runner: str | None = None
    acceleration: dict[str, Any] = PydField(default_factory=dict)
    generation: dict[str, Any] | None = None
    gate: dict[str, Any] | None = None


class Distribution(_Open):
    """One metric's distribution (latencies in seconds; None: no request timed it); other percentiles
    asked for are kept as extra keys (p99.9). Stored in manifests and in load sweeps alike."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    n: int = 0


class Goodput(_Open):
    slo: str | None = None
    good: int = 0
    requests: int = 0
    share: float | None = None
    rate: float | None = None  # good requests per second of the wall clock


class TimingFigures(_Open):
    """Request metrics of a set of generations by vLLM's definitions (evals.timing.latency, evals.speed)."""

    items: int = 0
    items_timed: int = 0
    batch_size_max: int | None = None
    generation_seconds: float | None = None
    new_tokens: int = 0
    mean_new_tokens: float | None = None
    mean_prompt_tokens: float | None = None
    decode_throughput_tokens_per_second: float | None = None
    requests: int = 0
    completed: int = 0
    failed: int = 0
    duration_seconds: float | None = None
    throughput_basis: str | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None
    total_token_throughput: float | None = None
    total_output_tokens: int = 0
    total_input_tokens: int = 0
    ttft: Distribution = PydField(default_factory=Distribution)
    tpot: Distribution = PydField(default_factory=Distribution)
    itl: Distribution = PydField(default_factory=Distribution)
    e2el: Distribution = PydField(default_factory=Distribution)
    goodput: Goodput | None = None


class BucketFigures(TimingFigures):
    bucket: str


class PackFigures(TimingFigures):
    pack: str


class ShapeFigures(TimingFigures):
    shape: str


class PeakMemory(_Open):
    bytes: int | None = None
    kind: str | None = None  # cuda_max_allocated | process_peak_rss
    scope: str | None = None  # run: covers this run alone; otherwise the process's lifetime


class KvCacheFigures(_Open):
    bytes_per_token: float | None = None
    bytes_per_token_full_precision: int | None = None
    source: str | None = None
    layers: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    element_size: int | None = None
    longest_context_tokens: int | None = None
    bytes_at_longest_context: int | None = None


class SpeedFigures(TimingFigures):
    """The manifest's `speed` section (evals.speed.run_speed)."""

    speed_schema: int | None = PydField(default=None, alias="schema")
    bucket_edges_prompt_tokens: list[int] = PydField(default_factory=list)
    definitions: str | None = None
    clock: str | None = None  # how the runner took its timestamps
    percentiles: list[float] = PydField(default_factory=list)
    buckets: list[BucketFigures] = PydField(default_factory=list)
    packs: list[PackFigures] = PydField(default_factory=list)
    shapes: list[ShapeFigures] = PydField(default_factory=list)
    peak_memory: PeakMemory | None = None
    kv_cache: KvCacheFigures | None = None
    load_seconds: float | None = None


class AccelEffects(_Open):
    """What one acceleration measured of itself; each method adds its own keys."""

    kv_bytes_ratio: Scalar = None
    target_level: Scalar = None
    achieved_level: Scalar = None
    acceptance_rate: Scalar = None
    accepted_tokens: Scalar = None
    # speculative decoding: tokens per verification step (accepted drafts + the target's own; 1.0 accepts nothing)
    tokens_per_target_forward: Scalar = None
    weight_bytes_ratio: Scalar = None
    max_cached_tokens: Scalar = None


class EngineEvidence(_Open):
    """What the engine itself says it runs (docs/served-engines.md, 'The engine's evidence'), never what its
    flags asked: the proof a flag took effect. `sources`: where each fact was read (/metrics, /props, log...)."""

    cache_dtype: str | None = None  # vLLM's and SGLang's KV cache dtype; llama.cpp's K/V types ("q4_0/q4_0")
    kv_tokens: int | None = None  # KV capacity in tokens: blocks x block size (llama.cpp: its cells)
    block_size: int | None = None
    blocks: int | None = None
    kv_mib: float | None = None
    flash_attn: bool | None = None
    n_ctx: int | None = None
    kernel: str | None = None  # the attention implementation or backend
    sources: dict[str, str] = PydField(default_factory=dict)

    def facts(self) -> dict[str, Any]:
        """The facts said, without where they were read: what two runs are compared on."""
        return {k: v for k, v in self.model_dump(exclude={"sources"}).items() if v is not None}


class MachineLoad(_Open):
    """What the machine did while a session generated (evals/timing/load.py): shares of all its CPUs."""

    cpus: int | None = None
    seconds: float | None = None
    others_share: float | None = None  # CPU time of every other process
    steal_share: float | None = None  # given by the hypervisor to other virtual machines
    own_share: float | None = None
    loadavg_start: list[float] | None = None
    loadavg_end: list[float] | None = None


class Session(_Open):
    """One process's session on the run (`finished` dates its timings)."""

    started: str | None = None
    finished: str | None = None
    generated: int = 0
    errors: int = 0
    seconds: float | None = None
    pid: int | None = None  # absent in older runs
    host: str | None = None
    waited_for_lock: bool | None = None
    status: str | None = None
    machine: MachineLoad | None = None  # absent in older runs: their load is unknown


class Batching(_Open):
    configured: int | str | None = None  # a number or "auto"
    final: int | None = None
    oom_halvings: int = 0
    plan: str | None = None  # how batches were composed: "tokens, longest first, least padding" or "shuffled"
    prompt_tokens: int | None = None  # the prompts' tokens, over the batches this session generated
    padded_prefill_tokens: int | None = None  # what their prefill computed: rows x longest prompt, per batch
    padding_share: float | None = None  # the part of those that was padding


class EarlyStopRecord(_Open):
    """A candidate that stopped generating once its FAIL was decided."""

    at: int | None = None  # items stored when it stopped
    of: int | None = None  # items the run asks
    rules: list[str] = PydField(default_factory=list)  # "pack: rule" decided to fail
    seconds_saved: float | None = None  # estimated from the run's own measured seconds per item


class InstrumentRecord(_Open):
    """A measuring instrument's run (runners/fault.py): what it planted, so no gate takes it for a candidate."""

    fault: dict[str, Any] | None = None  # the config's instrument.fault: rate, mode, packs, fields, seed
    planted: dict[str, list[str]] = PydField(default_factory=dict)  # item id -> fields whose answer it changed
    items: int = 0
    fields: int = 0

    def text(self) -> str:
        """"fault injection: rate 0.9, digit, packs needle_numbers"."""
        f = self.fault or {}
        where = [f"{k} {', '.join(f[k])}" for k in ("packs", "fields") if f.get(k)]
        return "fault injection: " + ", ".join([f"rate {f.get('rate'):g}" if f.get("rate") is not None else "rate ?",
                                                str(f.get("mode") or "digit"), *(where or ["every pack"])])


class ManifestRecreated(_Open):
    at: str | None = None
    reason: str | None = None
    note: str | None = None


class RunManifest(_Open):
    """A run's manifest.json. Every field is optional so that older runs still load."""

    schema_version: int = 1  # absent: written before versions were recorded
    name: str | None = None
    replicate: int = 0
    role: str | None = None  # "replicate": a repeat of the baseline under other batches (the noise)
    key: str | None = None
    config_file: str | None = None
    config: ConfigRecord = PydField(default_factory=ConfigRecord)
    model: ModelIdentity | None = None
    runner: str | None = None
    device: str | None = None
    dtype: str | None = None
    versions: Versions | None = None
    packs: list[PackRecord] = PydField(default_factory=list)
    emulated: list[str] = PydField(default_factory=list)
    status: str | None = None  # running | failed | complete | stopped (early, on a decided FAIL)
    failure: str | None = None
    created: str | None = None
    updated: str | None = None
    items_total: int | None = None
    items_error: int | None = None
    # how the answers ended, by finish_reason ("length": cut at max_new_tokens); absent in older runs
    finish_reasons: dict[str, int] | None = None
    items_sha256: str | None = None  # absent in older runs: their items cannot be verified
    # `--limit N`: only the first N items of each pack are stored; null: the config's whole plan
    limit: int | None = None
    load_seconds: float | None = None
    effects: dict[str, AccelEffects] = PydField(default_factory=dict)
    evidence: EngineEvidence | None = None  # a served engine's own word; absent in older and hf runs
    speed: SpeedFigures | None = None
    sessions: list[Session] = PydField(default_factory=list)
    batching: Batching | None = None
    prefix_reuse: dict[str, Any] | None = None
    server: dict[str, Any] | None = None
    # the device in words ("cpu: <model>", "cuda: NVIDIA H200"): speed is compared across runs of one kind
    device_kind: str | None = None
    # executor: ray: per actor its node, device, items (by id) and speed; actors that died and what was re-queued
    executor: dict[str, Any] | None = None
    manifest_recreated: ManifestRecreated | None = None
    early_stop: EarlyStopRecord | None = None
    instrument: InstrumentRecord | None = None  # a measuring instrument (fault injection), never a candidate
    # how `compare` gated this run, by the baseline's run key: {"replicates": the baseline replicates'
    # directory names ([] for none), "confirm": re-asks per flip}, so `report` judges it the same way
    gated_with: dict[str, dict[str, Any]] = PydField(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The manifest as written: what was read or set, unknown keys included, nothing invented."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def merged(self, updates: dict[str, Any], drop: tuple[str, ...] = ()) -> "RunManifest":
        """A new manifest with `updates` applied (validated) and `drop` removed; a
        `schema_version` in `updates` never lowers the stored one."""
        data = {k: v for k, v in self.to_dict().items() if k not in drop}
        data |= {k: v.model_dump(mode="json", by_alias=True, exclude_unset=True) if isinstance(v, BaseModel) else v
                 for k, v in updates.items()}
        if "schema_version" in updates:
            data["schema_version"] = max(self.schema_version, int(updates["schema_version"]))
        return RunManifest.model_validate(data)

    def with_session(self, entry: dict[str, Any], updates: dict[str, Any] | None = None) -> "RunManifest":
        sessions = self.to_dict().get("sessions", [])
        return self.merged({**(updates or {}), "sessions": [*sessions, entry]})

    @property
    def label(self) -> str | None:
        """The run's name, marked with its replicate for repeated runs (A/A); None without a name."""
        return None if self.name is None else self.name + (f"~r{self.replicate}" if self.replicate else "")

    @property
    def instrument_record(self) -> InstrumentRecord | None:
        """The run's measuring instrument: its record, else its config's (a manifest recreated from the config)."""
        asked = (self.config.model_extra or {}).get("instrument")
        return self.instrument or (InstrumentRecord(fault=asked.get("fault")) if isinstance(asked, dict) else None)

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.to_dict()
