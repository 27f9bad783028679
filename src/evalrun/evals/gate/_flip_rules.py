"""The gate's harmful-flip rules (`max_harmful_flips`), noise-aware, with the power of each pack's rules.

A flip counts only on a field the baseline got right in every replicate and, when re-asked, only if it
reproduced; confirmed flips beyond the limit fail without the noise test, the rest face FlipTest against the
A/A rate (docs/gate.md, 'Noise, confirmation, power and early stop')."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from evalrun.evals.compare import Flip, PackComparison
from evalrun.evals.stats import (
    FlipTest, MeasuredPower, RateTest, Scope, Stratum, detectable_rate, items_needed, rate_test,
)
from evalrun.evals.scoring import Stability
from evalrun.evals.gate._verdict import RuleResult


@dataclass
class PackPower:
    """The smallest harmful flip rate (a share of gated fields) a pack's rules detect with `power`; None: none."""

    pack: str
    items: int
    fields: int  # gated fields over every harmful-flip rule of the pack
    power: float
    rate: float | None
    noise_aware: bool
    scopes: list[Scope] = field(default_factory=list, repr=False)
    confirmed: bool = False  # the gate re-asks flips: a real change that reproduces counts without the noise test
    measured: MeasuredPower | None = None  # from a noise profile (evalrun calibrate); else the power is computed

    def needed(self, rate: float) -> int | None:
        """Paired items a pack like this would need to detect `rate` with this power."""
        return items_needed(self.scopes, self.items, rate, self.power)

    @property
    def sentence(self) -> str:
        test = ("(confirmed flips count, a real change reproducing when re-asked)" if self.confirmed else
                "beyond the A/A rate (one-sided Fisher)" if self.noise_aware else "(every flip counts)")
        if self.rate is None:
            return (f"{self.pack}: {self.items} paired items give its harmful-flip rules {self.fields} field(s) to "
                    f"catch a flip on: no flip rate can be detected with {self.power:.0%} probability")
        how = f"; {self.measured.text}" if self.measured else " (exact computation)"
        return (f"{self.pack}: at {self.items} paired items ({self.fields} fields right at baseline) its harmful-flip "
                f"rules detect a harmful flip rate of {100 * self.rate:.2g}% with {self.power:.0%} probability "
                f"{test}{how}")


@dataclass
class FlipFindings:
    """The harmful-flip rules of one pack, the flips they did not count, and their power."""

    rules: list[RuleResult]
    noise: list[Flip]  # on fields unstable at baseline
    unconfirmed: list[Flip]  # re-asked, and the flip did not reproduce
    power: PackPower


def rule_key(name: str, kind: str, limits: dict[str, tuple[int, str]], field_names: set[str]) -> str | None:
    """The rule a flip on field `name` counts against: the field's own limit, else its type's; None: neither."""
    if name in limits and name in field_names:
        return name
    own = {k for k in limits if k in field_names}
    return kind if kind in limits and name not in own else None


def _gated(stab: Stability | None, item_id: str, name: str) -> bool:
    return stab is None or stab.gated(item_id, name)


def _pct(x: int, n: int) -> str:
    return f"{x}/{n} ({100 * x / n:.3g}%)" if n else f"{x}/0"  # .3g: 100%, never 1e+02%


def reach(test: FlipTest, n: int) -> str:
    """What the noise test can reject at all on n fields, in words."""
    at = test.critical(n)
    aa = f"with A/A {test.aa_flips}/{test.aa_trials}"
    if at is None:
        return f"{aa} the test rejects no flip count of {n} field(s)"
    return f"{aa} the test rejects only from {at} flip(s) of {n}"


def cannot_fail(stab: Stability | None, can_fail: bool, n: int, test: FlipTest, rates: RateTest | None) -> str:
    """Why no outcome could fail a noise-aware rule on fields the baseline got right; "" when one could."""
    if can_fail or stab is None or not stab.measured or not (n or rates):
        return ""
    why = [f"{n} field(s) right in all {stab.replicates} replicates: {reach(test, n)}"] if n else []
    if rates is not None:
        why.append(f"{rates.fields} right in only some: even all answers wrong give p = {rates.smallest_p:.3g}")
    return "no outcome could fail it; " + "; ".join(why)


def _detail(what: str, key: str, x: int, n: int, test: FlipTest, stab: Stability | None, noise: int,
            unconfirmed: int, confirmed: int, limit: int, rates: RateTest | None) -> str:
    if stab is not None and stab.measured:
        p = test.p_value(x, n) if test.noise_aware else None
        if p is None:  # no field of this scope was right in every replicate: nothing a flip could be counted on
            text = (f"{what} {key}: no field right in all {stab.replicates} baseline replicates, so no flip to "
                    "test against A/A")
        else:
            text = (f"{what} {key}: flips on the {n} fields right in all {stab.replicates} baseline replicates, "
                    f"{_pct(x, n)} against A/A {_pct(test.aa_flips, test.aa_trials)}, one-sided Fisher p = "
                    f"{p:.3g} (fails only below {test.alpha:.3g}; {reach(test, n)})")
    else:
        text = f"{what} {key}: correct at baseline, not in the candidate"
    if confirmed:
        verdict = "beyond the limit: FAIL without the noise test" if confirmed > limit else "within the limit"
        text += f"; {confirmed} flip(s) confirmed by re-asking count as losses ({verdict})"
    if noise:
        text += f"; {noise} flip(s) on fields unstable at baseline listed as noise"
    if unconfirmed:
        text += f"; {unconfirmed} flip(s) did not reproduce when re-asked"
    if rates is not None:
        text += f"; {rates.text}"
    return text


def strata(pc: PackComparison, stab: Stability | None, scope: set[tuple[str, str]] | None = None,
           skip: frozenset[tuple[str, str]] = frozenset()) -> list[Stratum]:
    """(baseline right, replicates, candidate right, candidate answers incl. re-asks) of each field in `scope`
    (None: the pack) the baseline got right in only some replicates, but those in `skip`."""
    if stab is None or not stab.rated:
        return []
    paired = set(pc.item_ids)
    right = {(i, n) for i, n, _ in pc.right_fields}
    harmful = {f.key for f in pc.harmful}
    helpful = {f.key for f in pc.helpful}
    out: list[Stratum] = []
    for key, (pack, kind, k, reps) in stab.rated.items():
        if pack != pc.pack or key[0] not in paired or (scope is not None and (key[1], kind) not in scope) \
                or key in skip:
            continue
        cand_right = (key not in harmful) if key in right else (key in helpful)
        again, asked = pc.reasked.get(key, (0, 0))
        out.append((k, reps, int(cand_right) + again, 1 + asked))
    return out


def flip_rules(limits: dict[str, tuple[int, str]], confidence: float, power: float, pc: PackComparison, cand: str,
               stab: Stability | None = None, confirm: int = 0, flag_only: bool = False) -> FlipFindings:
    """The rules of `limits` on one pack; with `confirm`, its power is that of counting confirmed flips;
    `flag_only`: a flip the control run shares is not counted (it stays in the scope, as a refuted one)."""
    own = {k for k in limits if k in pc.field_names}
    counted: Counter = Counter()
    confirmed: Counter = Counter()
    noise: Counter = Counter()
    refuted: Counter = Counter()
    explained: Counter = Counter()
    noise_flips: list[Flip] = []
    unconfirmed: list[Flip] = []
    for f in pc.harmful:
        key = rule_key(f.field, f.kind, limits, pc.field_names)
        if key is None:
            continue
        if flag_only and f.in_control:
            explained[key] += 1
        elif not _gated(stab, f.item_id, f.field):
            noise[key] += 1
            noise_flips.append(f)
        elif f.confirmed is False:
            refuted[key] += 1
            unconfirmed.append(f)
        elif f.confirmed:
            confirmed[key] += 1
        else:
            counted[key] += 1
    alpha = 1.0 - confidence
    shared = frozenset(f.key for f in pc.harmful if flag_only and f.in_control)  # left out of the rate test too
    rules: list[RuleResult] = []
    scopes: list[Scope] = []
    for key, (limit, origin) in limits.items():
        by_field = key in pc.field_names
        scope = {(n, k) for n, k in pc.field_paired if (n == key if by_field else k == key and n not in own)}
        if not scope:
            continue  # no such field or type here, or each field of the type is judged by its own limit
        paired = sum(pc.field_paired[nk] for nk in scope)
        n = sum(1 for i, name, kind in pc.right_fields if (name, kind) in scope and _gated(stab, i, name))
        y, m = stab.aa_counts([(pc.pack, nm, k) for nm, k in scope]) if stab and stab.measured else (0, 0)
        test = FlipTest(limit, alpha, y, m)
        c = confirmed[key]
        x = counted[key] + c  # confirmed flips are real: the noise test weighs them with the rest
        rates = rate_test(strata(pc, stab, scope, shared), alpha)
        fails = c > limit or test.fails(x, n) or (rates is not None and rates.fails)
        can_fail = (n > limit and (confirm > 0 or test.critical(n) is not None)) or (rates is not None and rates.can_fail)
        what = "field" if by_field else "field type"
        rule = f"max_harmful_flips[{key}]"
        detail = _detail(what, key, x, n, test, stab, noise[key], refuted[key], c, limit, rates)
        if explained[key]:
            detail += f"; {explained[key]} flip(s) also in the control not counted (flips: flag_only)"
        rules.append(RuleResult(cand, pc.pack, rule, float(x), float(limit), not fails, detail, origin,
                                baseline_right=n + (rates.fields if rates else 0), in_scope=paired,
                                p_value=test.p_value(x, n), aa_flips=y if m else None, aa_trials=m or None,
                                cannot_fail=cannot_fail(stab, can_fail, n, test, rates)))
        scopes.append(Scope(rule, FlipTest(limit, alpha) if confirm else test, n))
    found = PackPower(pc.pack, pc.n, sum(s.fields for s in scopes), power, detectable_rate(scopes, power),
                      any(s.test.noise_aware for s in scopes), scopes, confirmed=bool(confirm))
    return FlipFindings(rules, noise_flips, unconfirmed, found)


def detect_rate_rule(rate: float, power: PackPower, cand: str) -> RuleResult:
    """`detect_rate`: a pack too small to detect `rate` is refused a pass (incomplete, not a regression)."""
    needed = power.needed(rate)
    need = f"about {needed} paired items would" if needed else "no number of items like these would"
    detail = (f"smallest harmful flip rate (%) the pack's flip rules detect with {power.power:.0%} probability at "
              f"{power.items} paired items; {need} detect {100 * rate:g}%")
    measured = float("nan") if power.rate is None else round(100 * power.rate, 3)
    ok = power.rate is not None and power.rate <= rate
    return RuleResult(cand, power.pack, "detect_rate", measured, 100 * rate, ok, detail, "gate",
                      on_fail="incomplete", items_needed=needed)
