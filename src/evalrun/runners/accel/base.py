"""What an acceleration method is: hooks, a cache object or `generate` arguments on a loaded model, and a
report of what it actually did. The runner reads only these methods and the declared `Capabilities`, so
adding a method never touches the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict

from evalrun.contract.validation import model_at  # noqa: F401  (re-exported: methods' settings use it)


def cache_kwarg() -> str:
    """The name under which this transformers version takes a cache object in `generate`."""
    try:
        from transformers.generation.utils import ALL_CACHE_NAMES
    except ImportError:
        return "past_key_values"
    return "cache" if "cache" in ALL_CACHE_NAMES else "past_key_values"


# Bounds for settings counted in tokens: a value past these is no setting at all
# (a quantization group or budget larger than any context leaves the cache untouched).
LONGEST_CONTEXT = 1 << 20  # tokens; the longest context a served model plausibly has
MAX_TOKEN_GROUP = 8192  # tokens (or channels) in one quantization group / residual window


class AccelSettings(BaseModel):
    """Base of every method's settings: unknown keys are configuration errors, and
    inf/nan are refused (nothing means anything at infinity, and JSON cannot hold them)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


@dataclass(frozen=True)
class Capabilities:
    """What a method needs from the runner, declared in one place (the runner reads nothing else).

    emulated: changes results but not real cost (masked dense matmuls): reports make no speed claim.
    modifies_weights: the runner hands `prepare_model` a private copy of the loaded model.
    prefix_reuse: shared-prefix reuse may stay on (False when the method supplies its own cache or drafts).
    max_batch_size: the largest batch the method can generate (None: any).
    context_prefill: the runner prefills the text before the item's question first, through the cache
      the method supplies, and generates the rest from there (query-agnostic KV compression).
    warmup: before the timed batches the runner generates the first batch once more, untimed, its
      outputs discarded, and tells each method how long that took (`warmed_up`): a method that
      compiles pays its compile time there, reported apart from the generation timings (every
      method's `observe` sees that batch too).
    continuous_batching: the method works under `batching: {mode: continuous}` (runners/hf/_continuous.py),
      where transformers' paged cache and scheduler replace the cache object and the `generate` call: it
      needs no cache of its own, no `generate_kwargs` and no padded batch, and its hooks take packed
      inputs (every request's tokens in one row, no attention_mask); `observe` is called once per
      continuous session with outputs None. False (the default) makes such a config an error.
    """

    emulated: bool = False
    modifies_weights: bool = False
    prefix_reuse: bool = True
    max_batch_size: int | None = None
    context_prefill: bool = False
    warmup: bool = False
    continuous_batching: bool = False


def fact(key: str, value: Any) -> str:
    """One short fact for reports, e.g. "kv bytes ratio 0.25"."""
    return f"{key.replace('_', ' ')} {value:g}" if isinstance(value, (int, float)) else f"{key} {value}"


def settings_label(name: str, settings: dict[str, Any], keys: tuple[str, ...]) -> str:
    """ "name (v1 v2)" from the settings present among `keys`, in that order."""
    main = [str(settings[k]) for k in keys if settings.get(k)]
    return f"{name} ({' '.join(main)})" if main else name


class Acceleration:
    """One configured acceleration, bound to one run: a subclass with a `name` in a module of runners/accel/.

    The runner calls only the hooks below and `run_capabilities()`; reports read only `label`, `headline` and
    `kv_bytes_ratio`, so a new method touches no other file.
    """

    name: ClassVar[str]
    settings_model: ClassVar[type[AccelSettings]]
    description: ClassVar[str] = ""
    # what the method can need under any settings; `run_capabilities` narrows it for one run
    capabilities: ClassVar[Capabilities] = Capabilities()
    # effects shown in report headlines, in this order (see `headline`)
    headline_keys: ClassVar[tuple[str, ...]] = ()
    # settings shown in the method's label, in this order (see `label`)
    label_keys: ClassVar[tuple[str, ...]] = ("quant", "backend", "method", "mode", "level")
    # settings the contract tests (tests/runners/test_accel_contract.py) run the method with on a
    # tiny Llama: every method gives at least one, so a new method is tested by being added
    examples: ClassVar[tuple[dict[str, Any], ...]] = ()
    # merging several workers' effects (`merged_effects`): the counters summed, a rate recomputed from
    # its summed (numerator, denominator) effects, and the counter other averages are weighted by
    effect_counters: ClassVar[frozenset[str]] = frozenset({"generate_calls"})
    effect_ratios: ClassVar[dict[str, tuple[str, str]]] = {}
    effect_weights: ClassVar[dict[str, str]] = {}

    def __init__(self, settings: AccelSettings):
        self.settings = settings

    # --- what it is -----------------------------------------------------------------------------

    def run_capabilities(self) -> Capabilities:
        """The capabilities of this configured instance (e.g. a batch cap only some settings need)."""
        return self.capabilities

    @classmethod
    def describe(cls) -> str:
        """One line for `evalrun accelerations`."""
        return cls.description

    @classmethod
    def label(cls, settings: dict[str, Any]) -> str:
        """The method with its main settings, for reports, e.g. "kv_cache (int4 quanto)"."""
        return settings_label(cls.name, settings, cls.label_keys)

    @classmethod
    def headline(cls, effects: dict[str, Any]) -> list[str]:
        """The few measured effects a reader needs to see that the method took effect."""
        return [fact(k, effects[k]) for k in cls.headline_keys if effects.get(k) is not None]

    @classmethod
    def kv_bytes_ratio(cls, effects: dict[str, Any]) -> float | None:
        """KV bytes stored / full precision, as measured (None: the method does not change the cache)."""
        return None

    def shares_batch_state(self) -> bool:
        """Whether an item's outputs depend on its batch mates, not only on the batch size (a quantization
        scale spanning the batch): an answer is then read teacher-forced only among the items it was
        generated with, never off another batch's generation (evals/drift/teacher_force.py)."""
        return False

    def forced_in_one_pass(self, answer_tokens: int) -> str | None:
        """Why a teacher-forced answer of `answer_tokens` tokens must be read step by step (None: this method
        acts on the answer's tokens in one chunk after the prompt's prefill exactly as it does while decoding,
        runners/hf/forced_read.py). By default a method is assumed to act on each decode step."""
        return f"{self.name} acts on each decode step"

    def key_extras(self) -> dict[str, Any]:
        """What else can change outputs beyond the settings (e.g. a draft model's
        content hash); part of the run's cache key."""
        return {}

    def check_device(self, device: str, dtype: str) -> None:
        """Refuse a device or dtype the method cannot run on, once both are resolved (`device: auto`
        is only known then): raise ValueError("<settings key>: <why>"), a config error there."""

    # --- hooks, in the order the runner calls them ------------------------------------------------

    def prepare_model(self, model: Any) -> Any:
        """Return the model to generate with (only called when `capabilities.modifies_weights`)."""
        return model

    def set_calibration_texts(self, texts: list[str]) -> None:
        """The run's rendered prompts, before `attach`, for methods that calibrate on them."""

    def attach(self, model: Any) -> None:
        """Install hooks on the model; called once before the run's first batch."""

    def detach(self, model: Any) -> None:
        """Remove whatever attach installed, so a shared loaded model is left clean."""

    def warmed_up(self, seconds: float) -> None:
        """The untimed warm-up batch (`Capabilities.warmup`) took `seconds`; timed batches follow."""

    def generate_kwargs(self, model: Any, batch_size: int) -> dict[str, Any]:
        """Extra `generate` arguments for one call; must be fresh objects each call."""
        return {}

    def observe(self, model: Any, outputs: Any) -> None:
        """Look at one finished `generate` call to record what the method did."""

    def effects(self) -> dict[str, Any]:
        """Evidence that the method took effect, for the run manifest (JSON-serialisable)."""
        return {}

    @classmethod
    def merged_effects(cls, parts: list[dict[str, Any]]) -> dict[str, Any]:
        """The effects of several workers' copies of the method (Ray actors) as one record:
        counters summed, rates recomputed from `effect_ratios` (`merge_effects` below)."""
        return merge_effects(parts, cls.effect_counters, cls.effect_ratios, cls.effect_weights)


# Workers' effects as one record (`Acceleration.merged_effects`): the run's is their sum, not any one of them.
# Counters (`effect_counters`) are summed, element by element in a mapping or list; rates (`effect_ratios`) are
# recomputed from summed parts. Anything else is a setting or a model property, kept; where workers differ, a
# `max_...` stays a maximum, a flag holds only if it holds everywhere, other numbers are averaged weighted by
# the calls each worker made (or a method's `effect_weights`), and other values are kept as the distinct ones.
DEFAULT_WEIGHT = "generate_calls"


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _sum(values: list[Any]) -> Any:
    known = [v for v in values if v is not None]
    if not known:
        return None
    if all(isinstance(v, dict) for v in known):
        keys = list(dict.fromkeys(k for v in known for k in v))
        return {k: _sum([v.get(k) for v in known]) for k in keys}
    if all(isinstance(v, list) for v in known) and len({len(v) for v in known}) == 1:
        return [_sum([v[i] for v in known]) for i in range(len(known[0]))]
    if all(_number(v) for v in known):
        total = sum(known)
        return round(total, 4) if isinstance(total, float) else total
    return _distinct(known)


def _weighted(values: list[Any], weights: list[float]) -> Any:
    pairs = [(v, w) for v, w in zip(values, weights) if v is not None]
    if not pairs:
        return None
    if all(isinstance(v, dict) for v, _ in pairs):
        keys = list(dict.fromkeys(k for v, _ in pairs for k in v))
        return {k: _weighted([v.get(k) for v, _ in pairs], [w for _, w in pairs]) for k in keys}
    if all(isinstance(v, list) for v, _ in pairs) and len({len(v) for v, _ in pairs}) == 1:
        return [_weighted([v[i] for v, _ in pairs], [w for _, w in pairs]) for i in range(len(pairs[0][0]))]
    if not all(_number(v) for v, _ in pairs):
        return _distinct([v for v, _ in pairs])
    total = sum(w for _, w in pairs)
    if total <= 0:
        return round(sum(v for v, _ in pairs) / len(pairs), 4)
    return round(sum(v * w for v, w in pairs) / total, 4)


def _distinct(values: list[Any]) -> Any:
    out: list[Any] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out[0] if len(out) == 1 else out


def _merge_value(key: str, values: list[Any], weights: list[float], counters: frozenset[str]) -> Any:
    if key in counters:
        return _sum(values)
    if all(v == values[0] for v in values):
        return values[0]
    if all(isinstance(v, bool) for v in values):
        return all(values)
    known = [v for v in values if v is not None]
    if known and all(_number(v) for v in known) and key.startswith(("max_", "min_")):
        return max(known) if key.startswith("max_") else min(known)
    return _weighted(values, weights)


def merge_effects(parts: list[dict[str, Any]], counters: frozenset[str] = frozenset({DEFAULT_WEIGHT}),
                  ratios: dict[str, tuple[str, str]] | None = None,
                  weights: dict[str, str] | None = None) -> dict[str, Any]:
    """The effects of one method over every worker that ran it (`parts`, one per worker)."""
    parts = [p for p in parts if p]
    if len(parts) <= 1:
        return dict(parts[0]) if parts else {}
    ratios, weights = ratios or {}, weights or {}
    out: dict[str, Any] = {}
    for key in dict.fromkeys(k for p in parts for k in p):
        having = [p for p in parts if key in p]
        wkey = weights.get(key, DEFAULT_WEIGHT)
        w = [float(p[wkey]) if _number(p.get(wkey)) else 0.0 for p in having]
        out[key] = _merge_value(key, [p[key] for p in having], w, counters)
    for key, (num, den) in ratios.items():
        if key in out and _number(out.get(num)) and _number(out.get(den)):
            out[key] = round(out[num] / out[den], 4) if out[den] else None
    out["workers"] = len(parts)
    return out
