"""How many items a pack needs before its harmful-flip rules can catch a given flip rate
(`evalrun plan`), measured from a stored baseline run.

The stored baseline says how many fields per item its flip rules watch and how
many of those it gets right (and, with replicates stored beside it, how many are
stable and what its A/A rate is); the gate's exact power (evals.stats) then says
how many items like these detect `rate` with probability `power`, and the
baseline's own measured seconds per item, per pack, what generating them costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalrun.evals.speed import measure
from evalrun.evals.gate import GateConfig, evaluate
from evalrun.evals.compare import pair
from evalrun.evals.results import RunResult
from evalrun.evals.scoring import score_run, stability


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
