"""Speculative decoding through transformers' assisted generation (docs/accelerations.md, 'The levers').

`prompt_lookup`, `draft_model` and `early_exit` (the target's own first `exit_layer` layers, as in LayerSkip)
propose draft tokens; the target verifies each round in one pass. Greedy verification is lossless in exact
arithmetic, but that pass runs other kernels than one-token decoding: a byte-level divergence is a finding.

Drafted and accepted tokens are counted as they happen, never estimated: `attach` wraps the model's
`_get_candidate_generator` so each `generate`'s candidate generator is instrumented; `detach` removes it.

The draft length is set on each generator directly: transformers 5 ignores a `num_assistant_tokens` passed to
`generate`. With `schedule: heuristic` the adapted length carries over between calls within a run and restarts
from `num_tokens` at each run, so run order inside one process cannot change a run's speed.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_serializer, model_validator

from evalrun.runners.accel.base import AccelSettings, Acceleration, Capabilities

# the settings each method takes (besides `method`)
_KEYS: dict[str, tuple[str, ...]] = {"prompt_lookup": ("num_tokens", "max_ngram"),
                                     "draft_model": ("draft", "num_tokens", "schedule"),
                                     "early_exit": ("exit_layer", "num_tokens", "schedule")}
_DEFAULT_NUM_TOKENS = {"prompt_lookup": 10, "draft_model": 5, "early_exit": 5}
_REQUIRED = {"draft_model": "draft", "early_exit": "exit_layer"}


class SpeculativeSettings(AccelSettings):
    method: Literal["prompt_lookup", "draft_model", "early_exit"]
    # tokens proposed per round: prompt_lookup_num_tokens, or the initial num_assistant_tokens
    num_tokens: int | None = Field(default=None, ge=1, le=256)  # more drafted tokens per round than this is never accepted
    # prompt_lookup: longest n-gram matched against the context (max_matching_ngram_size)
    max_ngram: int | None = Field(default=None, ge=1, le=64)
    # draft_model: any model spec evalrun accepts (alias, HF id, local dir, .gguf)
    draft: str | None = None
    # draft_model / early_exit: num_assistant_tokens_schedule
    schedule: Literal["heuristic", "constant"] | None = None
    # early_exit: number of the target's layers that draft
    exit_layer: int | None = Field(default=None, ge=1, le=1024)

    @model_validator(mode="before")
    @classmethod
    def _keys_for_method(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        method = data.get("method")
        if method not in _KEYS:
            return data  # a missing or unknown method is reported by the field itself
        for key in data:
            if key != "method" and key in cls.model_fields and key not in _KEYS[method]:
                users = [m for m, keys in _KEYS.items() if key in keys]
                raise ValueError(
                    f"{key} does not apply to method {method} (it belongs to {', '.join(users)}); "
                    f"{method} takes: {', '.join(_KEYS[method])}"
                )
        return data

    @model_validator(mode="after")
    def _complete(self) -> "SpeculativeSettings":
        needed = _REQUIRED.get(self.method)
        if needed and getattr(self, needed) is None:
            example = "draft: <model spec sharing the tokenizer>" if needed == "draft" else "exit_layer: <int>"
            raise ValueError(f"method {self.method} needs {needed} ({example})")
        if self.num_tokens is None:
            self.num_tokens = _DEFAULT_NUM_TOKENS[self.method]
        if self.method == "prompt_lookup" and self.max_ngram is None:
            self.max_ngram = 2
        if self.method in ("draft_model", "early_exit") and self.schedule is None:
            self.schedule = "heuristic"
        if self.method == "draft_model":
            from evalrun.runners.models import ModelNotFound, resolve_model

            try:
                resolve_model(str(self.draft))
            except ModelNotFound as exc:
                raise ValueError(f"draft: {exc}") from None
        return self

    @model_serializer(mode="wrap")
    def _only_this_method(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        return {k: v for k, v in data.items() if k == "method" or k in _KEYS[self.method]}


def _text_config(model: Any) -> Any:
    return model.config.get_text_config(decoder=True)


class _Round:
    """Counters of one `generate` call, committed to the run's totals by `observe`."""

    def __init__(self) -> None:
        self.prompt_len: int | None = None
        self.rounds = 0
        self.drafted = 0
        self.accepted = 0
        self.generator: Any = None


class SpeculativeDecoding(Acceleration):
    name: ClassVar[str] = "speculative"
    settings_model: ClassVar[type[AccelSettings]] = SpeculativeSettings
    # assisted generation runs one sequence at a time and keeps its own candidate caches
    capabilities: ClassVar[Capabilities] = Capabilities(prefix_reuse=False, max_batch_size=1)
    headline_keys: ClassVar[tuple[str, ...]] = ("acceptance_rate", "tokens_per_target_forward", "accepted_tokens")
    effect_counters: ClassVar[frozenset[str]] = frozenset({
        "generate_calls", "generate_calls_unassisted", "generate_calls_failed", "verify_rounds", "drafted_tokens",
        "accepted_tokens", "tokens_generated"})
    effect_ratios: ClassVar[dict[str, tuple[str, str]]] = {
        "acceptance_rate": ("accepted_tokens", "drafted_tokens"),
        "tokens_per_target_forward": ("tokens_generated", "verify_rounds")}
    examples: ClassVar[tuple[dict[str, Any], ...]] = ({"method": "prompt_lookup"}, {"method": "early_exit", "exit_layer": 1})
    description: ClassVar[str] = (
        "Speculative decoding (transformers assisted generation): prompt lookup, a draft model sharing the "
        "tokenizer, or early-exit self-speculation; lossless in exact arithmetic"
    )

    def __init__(self, settings: SpeculativeSettings):
        super().__init__(settings)
        self.settings: SpeculativeSettings = settings
        self._draft_model: Any = None
        self._draft_info: dict[str, Any] | None = None
        self._installed: Any = None
        self._layers_saved: tuple[Any, int] | None = None
        self._saved_configs: list[tuple[Any, dict[str, Any]]] = []
        self._num_tokens_now: int | None = settings.num_tokens
        self._confidence_threshold: float | None = None
        self._pending: _Round | None = None
        self._calls = 0
        self._calls_unassisted = 0
        self._calls_failed = 0
        self._rounds = 0
        self._drafted = 0
        self._accepted = 0
        self._tokens = 0
        self._max_drafted_per_round = 0

    # --- lifecycle -----------------------------------------------------------------

    def attach(self, model: Any) -> None:
        s = self.settings
        if s.method == "draft_model":
            self._draft_model = self._load_draft(model)
        elif s.method == "early_exit":
            layers = int(_text_config(model).num_hidden_layers)
            if not 1 <= int(s.exit_layer or 0) < layers:
                raise ValueError(
                    f"speculative.exit_layer {s.exit_layer} must be between 1 and {layers - 1}: "
                    f"the model has {layers} layers"
                )
            # transformers truncates the model by setting config.num_hidden_layers while it drafts and
            # does not restore it if drafting raises: guard the shared model against that
            base_config = getattr(model, model.base_model_prefix).config
            self._layers_saved = (base_config, int(base_config.num_hidden_layers))
        # generate() writes the adapted draft length back into the assistant's generation config
        # when its schedule there is "heuristic": keep the shared loaded models as they were
        self._saved_configs = []
        for m in {id(model): model, id(self._draft_model): self._draft_model}.values():
            gc = getattr(m, "generation_config", None)
            if gc is not None:
                self._saved_configs.append(
                    (gc, {k: getattr(gc, k, None) for k in ("num_assistant_tokens", "num_assistant_tokens_schedule")})
                )
        self._num_tokens_now = s.num_tokens
        original = model._get_candidate_generator  # bound method, or a wrapper another method installed

        def _get_candidate_generator(*args: Any, **kwargs: Any) -> Any:
            generator = original(*args, **kwargs)
            input_ids = kwargs.get("input_ids", args[1] if len(args) > 1 else None)
            self._instrument(generator, input_ids)
            return generator

        self._installed = (original, "_get_candidate_generator" in vars(model))
        model._get_candidate_generator = _get_candidate_generator

    def detach(self, model: Any) -> None:
        if self._installed is not None:
            original, was_instance_attr = self._installed
            if was_instance_attr:
                model._get_candidate_generator = original
            else:
                del model._get_candidate_generator
            self._installed = None
        for gc, values in self._saved_configs:
            for k, v in values.items():
                setattr(gc, k, v)
        self._saved_configs = []
        self._restore_layers()

    def _restore_layers(self) -> None:
        if self._layers_saved is not None:
            config, layers = self._layers_saved
            config.num_hidden_layers = layers

    def _load_draft(self, model: Any) -> Any:
        from evalrun.runners.models import load_model, resolve_model

        spec = str(self.settings.draft)
        source = resolve_model(spec)
        device = model.device.type if model.device.index in (None, 0) else str(model.device)
        dtype = str(model.dtype).removeprefix("torch.")
        draft, _tok, seconds = load_model(source, device, dtype)
        target_vocab = int(_text_config(model).vocab_size)
        draft_vocab = int(_text_config(draft).vocab_size)
        if draft_vocab != target_vocab:
            raise ValueError(
                f"speculative.draft {spec!r} has a vocabulary of {draft_vocab} tokens but the target model has "
                f"{target_vocab}: a draft must share the target's tokenizer"
            )
        self._draft_info = {"spec": spec, "kind": source.kind, "identity": source.identity, "vocab_size": draft_vocab,
                            "num_layers": int(getattr(_text_config(draft), "num_hidden_layers", 0) or 0) or None,
                            "parameters": sum(p.numel() for p in draft.parameters()), "is_target": draft is model,
                            "load_seconds": round(seconds, 3)}
        return draft

    # --- per call ------------------------------------------------------------------

    def generate_kwargs(self, model: Any, batch_size: int) -> dict[str, Any]:
        if batch_size != 1:
            raise ValueError(f"speculative decoding generates one sequence at a time, got a batch of {batch_size}")
        if self._pending is not None:  # the previous call raised before observe()
            self._calls_failed += 1
        self._pending = _Round()
        s = self.settings
        if s.method == "prompt_lookup":
            return {"prompt_lookup_num_tokens": s.num_tokens, "max_matching_ngram_size": s.max_ngram}
        if s.method == "draft_model":
            if self._draft_model is None:
                raise RuntimeError("speculative: generate_kwargs called before attach loaded the draft model")
            return {"assistant_model": self._draft_model}
        return {"assistant_early_exit": s.exit_layer}

    def _instrument(self, generator: Any, input_ids: Any) -> None:
        call = self._pending
        if call is None:  # a generate call this run did not prepare (not ours to count)
            return
        call.generator = generator
        call.prompt_len = int(input_ids.shape[-1]) if input_ids is not None else None
        if self.settings.method != "prompt_lookup" and hasattr(generator, "num_assistant_tokens"):
            generator.num_assistant_tokens = self._num_tokens_now
            generator.assistant_generation_config.num_assistant_tokens_schedule = self.settings.schedule
            self._confidence_threshold = getattr(generator, "assistant_confidence_threshold", None)
        get_candidates = generator.get_candidates
        update = generator.update_candidate_strategy

        def counted_get_candidates(ids: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                candidate_ids, candidate_logits = get_candidates(ids, *args, **kwargs)
            finally:
                self._restore_layers()
            drafted = int(candidate_ids.shape[-1]) - int(ids.shape[-1])
            call.rounds += 1
            call.drafted += drafted
            self._max_drafted_per_round = max(self._max_drafted_per_round, drafted)
            return candidate_ids, candidate_logits

        def counted_update(ids: Any, scores: Any, num_matches: Any) -> Any:
            call.accepted += int(num_matches)
            return update(ids, scores, num_matches)

        generator.get_candidates = counted_get_candidates
        generator.update_candidate_strategy = counted_update

    def observe(self, model: Any, outputs: Any) -> None:
        call, self._pending = self._pending, None
        if call is None:
            return
        self._calls += 1
        if call.generator is None:
            self._calls_unassisted += 1  # generate did not take the assisted path: visible in the effects
            return
        sequences = getattr(outputs, "sequences", outputs)
        if call.prompt_len is not None:
            self._tokens += int(sequences.shape[-1]) - call.prompt_len
        self._rounds += call.rounds
        self._drafted += call.drafted
        self._accepted += call.accepted
        if self.settings.method != "prompt_lookup" and self.settings.schedule == "heuristic":
            self._num_tokens_now = int(call.generator.num_assistant_tokens)

    def key_extras(self) -> dict[str, Any]:
        """A draft model's content hash: new draft weights must not reuse stored results."""
        if self.settings.method != "draft_model" or not self.settings.draft:
            return {}
        from evalrun.runners.models import resolve_model

        return {"draft": resolve_model(str(self.settings.draft)).identity}

    def effects(self) -> dict[str, Any]:
        s = self.settings
        out: dict[str, Any] = {
            "method": s.method,
            "settings": s.model_dump(mode="json"),
            "generate_calls": self._calls,
            "generate_calls_unassisted": self._calls_unassisted,
            "generate_calls_failed": self._calls_failed,
            "verify_rounds": self._rounds,  # target forward passes, prefill included
            "drafted_tokens": self._drafted,
            "accepted_tokens": self._accepted,
            "acceptance_rate": round(self._accepted / self._drafted, 4) if self._drafted else None,
            "tokens_generated": self._tokens,
            # accepted drafts + the target's own token per verification step: 1.0 when nothing is accepted (the
            # gate's min_tokens_per_step floor); a round that drafted nothing is a step too
            "tokens_per_target_forward": round(self._tokens / self._rounds, 3) if self._rounds else None,
            "max_drafted_per_round": self._max_drafted_per_round,
        }
        if s.method != "prompt_lookup":
            out["num_assistant_tokens_initial"] = s.num_tokens
            out["num_assistant_tokens_final"] = self._num_tokens_now
            out["assistant_confidence_threshold"] = self._confidence_threshold
        if s.method == "draft_model":
            out["draft"] = self._draft_info
        if s.method == "early_exit":
            out["exit_layer"] = s.exit_layer
        return out
