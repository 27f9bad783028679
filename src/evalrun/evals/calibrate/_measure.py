"""Measuring a noise profile from R stored repeats of one config: every pair of repeats is an A/A comparison.
Each pair is gated twice, as `compare` would gate it: with the other R - 2 repeats as the baseline's replicates
(the profile), and one run against one (no profile); every FAIL is a false one. Power is measured the same way,
with harmful flips planted (runners/fault.py) at the rate each pack's verdict says it detects."""

from __future__ import annotations

import itertools
import math
import random
import statistics
import time
from typing import Callable, Sequence

import numpy as np

from evalrun.evals.compare import pair
from evalrun.evals.drift import token_drift
from evalrun.evals.gate import GateConfig, Verdict, collapse_rule, evaluate, rule_key
from evalrun.evals.results import RunResult
from evalrun.evals.scoring import ScoredItem, Stability, score_item, stability
from evalrun.evals.stats import MeasuredPower, Share, pack_power, percentile
from evalrun.evals.store import dists
from evalrun.evals.timing.latency import PER_REQUEST
from evalrun.runners.fault import FaultSpec, plant
from evalrun.runners.logprobs import ForcedDists, TokenDists
from evalrun.evals.calibrate._profile import (
    GateRates, NoiseProfile, ScopeNoise, SpeedSpread, UnstableField,
)

Scored = Sequence[ScoredItem]


def scope_noise(scored: Sequence[Scored], confidence: float) -> list[ScopeNoise]:
    """Per (pack, field type), over every ordered pair of repeats: fields right in the first, wrong in the second."""
    flips: dict[tuple[str, str], list[int]] = {}
    runs = [{s.item_id: s for s in run} for run in scored]
    for a, b in itertools.permutations(runs, 2):
        for item_id, s in a.items():
            if (t := b.get(item_id)) is None or t.prompt_hash != s.prompt_hash:
                continue
            for name, ftype in s.kinds.items():
                if s.field_right(name):
                    counts = flips.setdefault((s.pack, ftype), [0, 0])
                    counts[0] += not t.field_right(name)
                    counts[1] += 1
    return [ScopeNoise(pack=p, type=t, flips=Share.of(k, n, confidence)) for (p, t), (k, n) in sorted(flips.items())]


def unstable_fields(scored: Sequence[Scored], stab: Stability) -> list[UnstableField]:
    runs = [{s.item_id: s for s in run} for run in scored]
    out = []
    for item_id, name in sorted(stab.unstable):
        copies = [r[item_id] for r in runs if item_id in r]
        first = copies[0]
        answers = sorted({(c.fields[name].pred_norm if name in c.fields else None) or "" for c in copies})
        out.append(UnstableField(item=item_id, field=name, pack=first.pack, type=first.kinds[name],
                                 right=sum(c.field_right(name) for c in copies), answers=answers))
    return out


def speed_spread(runs: Sequence[RunResult]) -> list[SpeedSpread]:
    out = []
    for metric, q in itertools.product(("ttft", "tpot"), (50, 99)):
        per_run = [percentile([v for g in r.generations.values() if (v := PER_REQUEST[metric](g)) is not None], q)
                   for r in runs]
        known = [v for v in per_run if v]
        if known:
            out.append(SpeedSpread(metric=f"{metric}_p{q}", seconds=per_run,
                                   spread=max(known) / min(known) if len(known) > 1 else None))
    return out


def _as_forced(a: TokenDists, b: TokenDists) -> tuple[TokenDists, ForcedDists] | None:
    """b's distributions on the positions where both answers still agree, seen at a's top ids (an id outside b's
    top-k gets the least b's record allows: its k-th logprob or its rest, whichever is smaller)."""
    n = 0
    while n < min(len(a), len(b)) and a.ids[n] == b.ids[n]:
        n += 1
    if n == 0:
        return None
    at = np.empty((n, a.k), np.float32)
    for t in range(n):
        own = dict(zip(b.top_ids[t].tolist(), b.top_logprobs[t].tolist()))
        least = min(float(b.top_logprobs[t].min()), float(b.rest_logprob[t]))
        at[t] = [own.get(int(i), least) for i in a.top_ids[t]]
    rest = np.log(np.clip(1.0 - np.exp(at.astype(np.float64)).sum(axis=1), 1e-30, None)).astype(np.float32)
    return a, ForcedDists(at, rest, b.logprob[:n], b.top_ids[:n, 0], b.top_logprobs[:n, 0])


def kl_floor(runs: Sequence[RunResult]) -> float | None:
    """Mean per-token KL of repeat 0's next-token distributions against each other repeat's, on the tokens both
    answers share; None without stored logprobs."""
    stored = [dists.read(r.dir, TokenDists).records for r in runs]
    kls = []
    for other in stored[1:]:
        for item_id, a in stored[0].items():
            if (b := other.get(item_id)) is not None and (both := _as_forced(a, b)) is not None:
                kls.extend(token_drift(*both).kl.tolist())
    return float(np.mean(kls)) if kls else None


class _Pairs:
    """The repeats, scored once, and the verdict of any pair of them."""

    def __init__(self, runs: Sequence[RunResult], scored: Sequence[Scored], gate: GateConfig):
        self.runs, self.scored, self.gate = runs, scored, gate
        self.items = {it.id: it for it in runs[0].items}
        self.pairs = list(itertools.combinations(range(len(runs)), 2))

    def stab(self, i: int, j: int) -> Stability:
        return stability([self.scored[i], *(s for k, s in enumerate(self.scored) if k not in (i, j))])

    def verdict(self, i: int, j: int, cand: Scored, stab: Stability | None) -> Verdict:
        base, name = self.scored[i], self.runs[j].dir.name
        comparison = pair(list(base), list(cand), self.runs[i].dir.name, name, confidence=self.gate.confidence)
        return evaluate(comparison, self.gate, stab=stab,
                        speed=collapse_rule(self.gate, name, list(self.items.values()), base, cand))

    def planted(self, j: int, targets: list[tuple[str, str]], rate: float, rng: random.Random) -> tuple[Scored, int]:
        """Repeat j's scored answers with a digit changed in each target field with probability `rate`."""
        out = {s.item_id: s for s in self.scored[j]}
        by_item: dict[str, list[str]] = {}
        for item_id, name in targets:
            by_item.setdefault(item_id, []).append(name)
        planted = 0
        for item_id, names in by_item.items():
            gen = self.runs[j].generations.get(item_id)
            if gen is None or gen.output is None:
                continue
            text, changed = plant(self.items[item_id], gen.output, FaultSpec(rate=rate), rng, names)
            if changed:
                out[item_id] = score_item(self.items[item_id], gen.model_copy(update={"output": text,
                                                                                     "output_ids": None}))
                planted += len(changed)
        return [out[s.item_id] for s in self.scored[j]], planted


def _rates(verdicts: list[Verdict], confidence: float) -> GateRates:
    rules: dict[str, int] = {}
    for v in verdicts:
        for r in v.failed:
            rules[f"{r.pack}: {r.rule}"] = rules.get(f"{r.pack}: {r.rule}", 0) + 1
    return GateRates(false_fail=Share.of(sum(v.status == "fail" for v in verdicts), len(verdicts), confidence),
                     incomplete=sum(v.status == "incomplete" for v in verdicts), rules=dict(sorted(rules.items())))


def _targets(base: Scored, stab: Stability | None, gate: GateConfig, pack: str) -> list[tuple[str, str]]:
    """The (item, field) pairs of a pack a harmful-flip rule counts a flip on (without replicates: every field
    right at baseline)."""
    limits = gate.flip_limits()
    names = {n for s in base if s.pack == pack for n in s.fields}
    return [(s.item_id, n) for s in base if s.pack == pack for n in s.fields
            if (stab.gated(s.item_id, n) if stab else s.field_right(n)) and rule_key(n, s.kinds[n], limits, names)]


def _flip_rules_failed(verdict: Verdict, pack: str) -> bool:
    return any(r.pack == pack and r.rule.startswith("max_harmful_flips") for r in verdict.failed)


def measure(runs: Sequence[RunResult], scored: Sequence[Scored], gate: GateConfig, how: str, plants: int = 3,
            log: Callable[[str], None] = print) -> NoiseProfile:
    """The profile of R >= 3 repeats (repeat 0 first): what `evalrun calibrate` stores."""
    if len(runs) < 3:
        raise ValueError("a noise profile needs at least 3 repeats: each pair is gated with the others as replicates")
    p = _Pairs(runs, scored, gate)
    started, with_profile, without, aa = time.perf_counter(), [], [], {}
    for n, (i, j) in enumerate(p.pairs, 1):
        aa[i, j] = p.stab(i, j)
        with_profile.append(p.verdict(i, j, scored[j], aa[i, j]))
        without.append(p.verdict(i, j, scored[j], None))
        _eta(log, "A/A pairs gated", n, len(p.pairs), started)
    stab = stability(scored)
    rates = _rates(with_profile, gate.confidence), _rates(without, gate.confidence)
    # the repeats are worth gating with only where a right answer moved: on an engine whose answers did not, the
    # noise-aware tests only cost power (a few fields right everywhere and an A/A rate of 0 reject nothing)
    replicates = bool(stab.rated) or rates[1].false_fail.k > rates[0].false_fail.k  # right in some repeats only
    chosen = {(i, j): aa[i, j] if replicates else None for i, j in p.pairs}
    stated: dict[str, list[float]] = {}
    for v in with_profile if replicates else without:
        for pack, pw in v.power.items():
            if pw.rate is not None:
                stated.setdefault(pack, []).append(pw.rate)
    power = []
    for pack, found in sorted(stated.items()):
        rate = statistics.median(found)
        detected = trials = 0
        predicted, planted, started = [], 0, time.perf_counter()
        for n, ((i, j), v) in enumerate(zip(p.pairs, with_profile if replicates else without), 1):
            if (pw := v.power.get(pack)) is not None:
                predicted.append(pack_power(pw.scopes, rate))
            targets = _targets(scored[i], chosen[i, j], gate, pack)
            for seed in range(plants):
                cand, k = p.planted(j, targets, rate, random.Random(f"calibrate:{pack}:{i}:{j}:{seed}"))
                planted += k
                trials += 1
                detected += _flip_rules_failed(p.verdict(i, j, cand, chosen[i, j]), pack)
            _eta(log, f"{pack}: planted comparisons at {100 * rate:.2g}%", n, len(p.pairs), started)
        power.append(MeasuredPower(pack=pack, rate=rate, stated=gate.power,
                                      predicted=float(np.mean(predicted)) if predicted else 0.0,
                                      detected=Share.of(detected, trials, gate.confidence),
                                      flips=planted / trials if trials else 0.0))
    first = runs[0]
    return NoiseProfile(
        config=first.manifest.name or first.name, key=first.manifest.key or "", runs=[r.dir.name for r in runs], how=how,
        items=len(first.items), confidence=gate.confidence, gate=gate.model_dump(mode="json", exclude_defaults=True),
        scopes=scope_noise(scored, gate.confidence), unstable=unstable_fields(scored, stab), fields=stab.fields,
        kl_floor=kl_floor(runs), speed=speed_spread(runs), with_profile=rates[0], without_profile=rates[1],
        replicates=replicates, power=power, plants=plants)


def _eta(log: Callable[[str], None], what: str, done: int, total: int, started: float) -> None:
    """A line at every tenth of the way (and the last), with the time still to go at the pace so far."""
    step = max(1, math.ceil(total / 10))
    if done % step and done != total:
        return
    left = (time.perf_counter() - started) / done * (total - done)
    log(f"{what}: {done}/{total}" + (f" (about {left:.0f} s to go)" if done < total else ""))
