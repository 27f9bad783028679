"""Provenance before PASS (docs/gate.md, 'Provenance'): a candidate whose config asks for a change that the
engine (or the method's own proof) shows was not applied ran the baseline's computation, and its PASS would
vouch for a flag that never ran; it is a gap (exit 4) naming the flag and the evidence of both runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from evalrun.contract.manifest import RunManifest
from evalrun.evals.files import ConfigError
from evalrun.evals.gate._verdict import ALL_PACKS, Gap

NOT_IN_EFFECT = "the flag is not in effect"
AA_NOTE = "A/A comparison: the candidate's run key is the baseline's (the same config under another name)"
# a server flag (dashes as underscores) -> the evidence facts it governs (runners/openai/_evidence.py)
_CACHE, _SIZE = ("cache_dtype",), ("kv_tokens", "blocks", "kv_mib")
GOVERNS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("kv_cache_dtype", "type_k", "type_v", "cache_type_k", "cache_type_v", "ctk", "ctv"), _CACHE),
    **dict.fromkeys(("flash_attn", "fa"), ("flash_attn",)),
    **dict.fromkeys(("kv_cache_memory_bytes", "gpu_memory_utilization", "num_gpu_blocks_override",
                     "max_total_tokens", "mem_fraction_static"), _SIZE),
    "block_size": ("block_size",), "page_size": ("block_size",), "attention_backend": ("kernel",),
    **dict.fromkeys(("n_ctx", "ctx_size", "c", "context_length"), ("n_ctx", "kv_tokens")),
}


@dataclass(frozen=True)
class Provenance:
    gaps: list[Gap] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def provenance(base: RunManifest, cand: RunManifest, flags: Sequence[str]) -> Provenance:
    """Whether what `cand` asks beyond `base` took effect; `flags`: its server flags that differ from the
    baseline's (evals.speed.flag_changes: "--type_k 2", "no --flash_attn"); a measuring instrument is a gap too."""
    instrument = instrument_gaps(base, cand)
    if base.key is not None and base.key == cand.key:
        return Provenance(instrument, notes=[AA_NOTE])
    found = _served(base, cand, flags) if cand.runner == "openai" else _in_process(base, cand)
    return Provenance([*instrument, *found.gaps], found.notes)


def _served(base: RunManifest, cand: RunManifest, flags: Sequence[str]) -> Provenance:
    from evalrun.runners.openai import evidence_text, stored_evidence

    judged = [(f, GOVERNS[name]) for f in flags
              if (name := f.removeprefix("no ").split()[0].lstrip("-").replace("-", "_")) in GOVERNS]
    if not judged:
        return Provenance()
    b, c = stored_evidence(base.to_dict()), stored_evidence(cand.to_dict())
    if b is None or c is None:
        runs = " and ".join(n for n, e in (("the baseline", b), (str(cand.name), c)) if e is None)
        return Provenance(notes=[f"provenance not checked: the engine of {runs} said nothing of what it runs "
                                 f"(no /metrics, /props or /get_server_info fact, none in its log)"])
    bf, cf = b.facts(), c.facts()
    ignored = [f for f, facts in judged if (said := [k for k in facts if k in bf and k in cf])
               and all(bf[k] == cf[k] for k in said)]
    return Provenance([Gap(ALL_PACKS, f"{NOT_IN_EFFECT}: {cand.name} asks {', '.join(ignored)}, but its engine says "
                                      f"what the baseline's does: {evidence_text(c)}; baseline: {evidence_text(b)}")]
                      if ignored else [])


def _in_process(base: RunManifest, cand: RunManifest) -> Provenance:
    """An hf method asked beyond the baseline's that recorded no proof, or whose proof shows the baseline's
    computation (an attention implementation the model already ran)."""
    asked = {k: v for k, v in cand.config.acceleration.items() if base.config.acceleration.get(k) != v}
    gaps = []
    for name in sorted(asked):
        proof: dict[str, Any] = cand.effects[name].model_dump(exclude_unset=True) if name in cand.effects else {}
        was = base.effects["kernels"].model_dump().get("used") if "kernels" in base.effects else proof.get("before")
        if not proof:
            why = "the method recorded no proof that it ran (its effects are empty)"
        elif name == "kernels" and proof.get("used") == was:
            why = f"the model ran attention {proof.get('used')}, as the baseline did (proof: used {proof.get('used')}, " \
                  f"before {proof.get('before')})"
        else:
            continue
        gaps.append(Gap(ALL_PACKS, f"{NOT_IN_EFFECT}: {cand.name} asks acceleration.{name} {asked[name]}, but {why}"))
    return Provenance(gaps)


def instrument_gaps(base: RunManifest, cand: RunManifest) -> list[Gap]:
    """A measuring instrument's run (runners/fault.py) can fail, never pass: a gap (exit 4 unless a rule fails);
    as the baseline it would make the comparison meaningless (exit 2)."""
    if (was := base.instrument_record) is not None:
        raise ConfigError(f"the baseline {base.name} is a measuring instrument ({was.text()}); compare "
                          "against a run without `instrument`", file=base.config_file, path="instrument")
    record = cand.instrument_record
    return [] if record is None else [Gap(ALL_PACKS, f"{cand.name} is a measuring instrument ({record.text()}), not a "
                                                     "candidate: it can fail, never pass")]
