"""What is known before a run: a dry run (`evalrun check`, from a PreparedRun: no weights loaded) and the items
a pack needs (`evalrun plan`: the gate's exact power over the fields a stored baseline gets right and stable,
costed at its measured seconds per item; docs/gate.md, 'Measuring the noise and the power')."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Literal

from evalrun.contract.types import Item
from evalrun.evals.compare import pair
from evalrun.evals.files import ConfigError
from evalrun.evals.gate import GateConfig, evaluate
from evalrun.evals.results import PreparedRun, RunResult
from evalrun.evals.scoring import score_run, stability
from evalrun.evals.speed import Estimate, estimate, measure, reference_model
from evalrun.evals.store import RunStore

StoredState = Literal["complete", "partial", "none"]


@dataclass
class PackCheck:
    """One pack's items as a run would ask them."""

    pack: str
    items: int
    prompt_tokens_min: int
    prompt_tokens_median: float
    prompt_tokens_max: int
    fields: dict[str, int]  # field type -> fields asked
    decoys: int  # fields whose gold is absent from the document

    def fields_text(self) -> str:
        """'amount 12, date 12, id 12; 3 decoys'"""
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.fields.items())) or "no scored fields"
        return kinds + (f"; {self.decoys} decoy{'s' if self.decoys != 1 else ''}" if self.decoys else "")


@dataclass
class Stored:
    """How much of the run directory's work is done."""

    state: StoredState
    stored: int
    total: int

    def text(self) -> str:
        if self.state == "complete":
            return f"complete ({self.total} items stored; reused without generating)"
        if self.state == "partial":
            return f"{self.stored} of {self.total} items stored (the rest would be generated)"
        return "none"


@dataclass
class CheckResult:
    """What `evalrun check` reports for one config."""

    label: str
    config_file: str
    model: str
    device: str
    dtype: str
    context: int | None  # the model's or the server's context in tokens (None: unknown)
    max_new_tokens: int
    key: str
    run_dir: Path
    packs: list[PackCheck]
    stored: Stored
    estimate: Estimate
    prepared: PreparedRun = field(repr=False)
    notes: list[str] = field(default_factory=list)  # what could not be asked (a server not up yet)

    @property
    def items(self) -> int:
        return sum(p.items for p in self.packs)

    @property
    def prompt_room(self) -> int | None:
        """The most prompt tokens the context leaves beside max_new_tokens."""
        return self.context - self.max_new_tokens if self.context else None


def prompt_tokens(prepared: PreparedRun) -> dict[str, int]:
    """Each item's tokens as the model reads it (the chat template applied), by item id."""
    runner = prepared.runner
    return {it.id: runner.count_tokens(runner.render(it)) for it in prepared.items}


def pack_checks(items: list[Item], tokens: dict[str, int]) -> list[PackCheck]:
    """Per pack, in the order the packs first appear."""
    by_pack: dict[str, list[Item]] = {}
    for it in items:
        by_pack.setdefault(it.pack, []).append(it)
    out = []
    for pack, group in by_pack.items():
        counts = [tokens[it.id] for it in group]
        kinds = Counter(f.kind for it in group for f in it.fields)
        decoys = sum(1 for it in group for f in it.fields if f.gold is None)
        out.append(PackCheck(pack, len(group), min(counts), median(counts), max(counts), dict(kinds), decoys))
    return out


def stored_state(prepared: PreparedRun) -> tuple[Stored, set[str]]:
    """The run directory's state and the ids still to generate. Read only: a torn line is
    reported by the run that repairs it, not moved here."""
    wanted = [it.id for it in prepared.items]
    store = RunStore(prepared.dir)
    done = store.read_samples()  # {} when there is none; a link there is refused
    missing = {i for i in wanted if i not in done}
    stored = len(wanted) - len(missing)
    state: StoredState = "complete" if not missing else ("partial" if stored else "none")
    return Stored(state, stored, len(wanted)), missing


def inspect_run(prepared: PreparedRun, out: str | Path) -> CheckResult:
    """Everything `check` reports about one prepared run; loads no weights."""
    tokens = prompt_tokens(prepared)
    stored, missing = stored_state(prepared)
    config = prepared.config
    max_new = config.generation.max_new_tokens
    guess = estimate(prepared.items, tokens, max_new, missing, reference_model(prepared, out))
    runner = prepared.runner
    note = preflight(prepared)
    served = runner.served_context()  # a server's, where it says it (or its config)
    return CheckResult(prepared.label, config.source, config.model, prepared.device, prepared.dtype,
                       runner.max_context() or (served[0] if served else None), max_new, prepared.key, prepared.dir,
                       pack_checks(prepared.items, tokens), stored, guess, prepared, [note] if note else [])


# the config key a server's refusal of GET /models points at
_REFUSED_KEY = {401: "openai.api_key_env", 403: "openai.api_key_env"}


def preflight(prepared: PreparedRun) -> str | None:
    """The runner's question to its server (runners/base.py `preflight`); a refusal is the config's error."""
    from evalrun.runners.openai import ServerError

    try:
        return prepared.runner.preflight()
    except ServerError as exc:
        key = _REFUSED_KEY.get(exc.status or 0, "model" if exc.status is None else "openai.base_url")  # 404, 405
        raise ConfigError(str(exc), file=prepared.config.source, path=key) from None


@dataclass
class PackPlan:
    pack: str
    items: int  # paired items stored
    fields: int  # fields the flip rules watch, right (and stable) at baseline
    detectable: float | None  # the flip rate detected now with `power`
    needed: int | None  # items needed for `rate`; None: no number of items like these
    seconds_per_item: float | None  # measured by the stored baseline on this pack
    noise_aware: bool

    @property
    def seconds(self) -> float | None:
        if self.needed is None or self.seconds_per_item is None:
            return None
        return self.needed * self.seconds_per_item


@dataclass
class Plan:
    run_dir: Path
    replicates: int
    rate: float
    power: float
    packs: list[PackPlan]


def plan_from_run(base: RunResult, replicates: list[RunResult], rate: float, power: float,
                  gate: GateConfig | None = None) -> Plan:
    """The plan for every pack of a stored baseline (its replicates measure the noise)."""
    gate = (gate or GateConfig()).model_copy(update={"power": power})
    scored = score_run(base.items, base.generations)
    stab = stability([scored, *(score_run(r.items, r.generations) for r in replicates)])
    verdict = evaluate(pair(scored, scored, base.name, base.name, n_resamples=1), gate, stab=stab)
    max_new = (base.manifest.config.generation or {}).get("max_new_tokens")
    packs = []
    for pack, pw in sorted(verdict.power.items()):
        speed = measure(base.dir.name, [g for g in base.generations.values() if g.pack == pack],
                        max_new if isinstance(max_new, int) else None)
        packs.append(PackPlan(pack, pw.items, pw.fields, pw.rate, pw.needed(rate),
                              speed.seconds_per_item if speed else None, pw.noise_aware))
    return Plan(base.dir, 1 + len(replicates), rate, power, packs)
