"""The gate: declarative rules over a comparison, relative to the baseline measured in the same job (absolute
thresholds would need re-tuning after every library upgrade). Strict both ways: no dropped typed value by
default, and a name, threshold or empty gate it cannot honour is a ConfigError (docs/gate.md)."""

from __future__ import annotations

import difflib
from pathlib import Path
from dataclasses import replace
from typing import Annotated, Any, Collection, Iterable, Literal, Mapping, Sequence

from pydantic import Field, PrivateAttr, ValidationError

from evalrun.evals.files import ConfigError, read_yaml, validation_error
from evalrun.evals.gate._drift_rules import DriftRule, Strict
from evalrun.evals.gate._flip_rules import (
    FlipFindings, PackPower, cannot_fail, detect_rate_rule, flip_rules, reach, strata,
)
from evalrun.evals.compare import Comparison, Flip, PackComparison
from evalrun.evals.stats import FlipTest, MeasuredPower, rate_test
from evalrun.evals.gate._speed_rules import SpeedRule
from evalrun.evals.gate._shift_rule import ShiftRule, check_shift, shift_rule
from evalrun.contract.types import Item
from evalrun.evals.scoring import ScoredItem, Stability
from evalrun.evals.scoring.degenerate import Tally
from evalrun.evals.gate._verdict import ALL_PACKS, Gap, RuleResult, Verdict, no_rule_gaps, untestable_gaps
from evalrun.values.registry import type_names, typed_names

FIELD_KINDS: tuple[str, ...] = type_names()
# a dropped or altered value of a typed field (amount, number, date, id, ...) is never allowed by default
DEFAULT_MAX_HARMFUL: dict[str, int] = {k: 0 for k in FIELD_KINDS if k in typed_names()}


class PackRule(Strict):
    """Rules for one pack ("*" applies to every pack without its own entry); null disables a rule."""

    max_drop: float | None = Field(default=0.0, ge=0, le=100, description="largest allowed loss in points of the gate metric")
    non_inferiority: float | None = Field(
        default=None, ge=0, le=100, description="margin in points: fail when the CI lower bound of the delta is below -margin"
    )
    min_items: int | None = Field(default=None, ge=1, description="refuse to pass a pack with fewer paired items")
    detect_rate: float | None = Field(
        default=None, gt=0, lt=1, description="refuse to pass a pack whose harmful-flip rules cannot detect this flip rate "
        "(a share of the fields right at baseline) with the gate's `power`")
    min_recovery: float | None = Field(
        default=None, gt=0, le=100, description="percent: fail when the lower bound of the recovery interval (candidate "
        "item accuracy / baseline item accuracy, paired bootstrap at the gate's confidence) is below it")
    shift: ShiftRule | None = Field(default=None, description="fail a drop in most length or depth buckets (sign test)")

    def has_rule(self) -> bool:
        return any(getattr(self, name) is not None for name in type(self).model_fields)  # every field is a rule


class GateConfig(Strict):
    """The `gate:` section of a candidate config, or a `--gate` file."""

    metric: Literal["accuracy", "micro_f1"] = "accuracy"
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)
    # the probability at which each verdict states the smallest harmful-flip rate it detects
    power: float = Field(default=0.95, gt=0.5, lt=1.0)
    # re-ask each harmful flip this many more times (other batches, batch 1 first); a flip counts only
    # when it reproduces in the majority; 0: every flip counts as found
    confirm: int = Field(default=0, ge=0, le=15)
    # which harmful flips the flip rules count: all, or only those a control run (compare --control) did not share
    flips: Literal["all", "flag_only"] = "all"
    packs: dict[str, PackRule] = Field(default_factory=lambda: {ALL_PACKS: PackRule()})
    # field type (amount, number, date, id, text, enum) or field name -> allowed harmful flips.
    # Added to the defaults key by key; null disables a default explicitly (and the verdict says so).
    # A field named here is judged by its own limit instead of its type's.
    max_harmful_flips: dict[str, Annotated[int, Field(ge=0)] | None] = Field(default_factory=dict)
    # speed claims the candidate must back with a paired interval (evals/gate/_speed_rules.py)
    speed: list[SpeedRule] = Field(default_factory=list)
    # speculative decoding: the smallest acceptance rate (accepted / drafted tokens, as the run measured it)
    # the candidate must keep; a drafter that collapses is slower, not wrong, so no accuracy rule sees it
    min_acceptance: float | None = Field(default=None, gt=0, le=1)
    # and on every candidate whose run used it: tokens the target emits per verification step (accepted drafts
    # + its own); at or below this floor the candidate is a slower baseline; null disables it (the verdict says so)
    min_tokens_per_step: float | None = Field(default=1.05, ge=1)
    # the `collapse` rule (degenerate answers) and the early stop's canary; false drops both (the verdict says so)
    collapse: bool = True
    # teacher-forced drift limits, decided on their intervals (evals/drift/rules.py); gated only when named
    drift: list[DriftRule] = Field(default_factory=list)

    _file: str = PrivateAttr(default="<gate>")
    _prefix: str = PrivateAttr(default="gate")

    def pack_rule(self, pack: str) -> PackRule:
        return self.packs.get(pack) or self.packs.get(ALL_PACKS) or PackRule()

    def flip_limits(self) -> dict[str, tuple[int, str]]:
        """Effective harmful-flip limits with their origin ("default" or "gate")."""
        out = {k: (v, "default") for k, v in DEFAULT_MAX_HARMFUL.items()}
        for key, limit in self.max_harmful_flips.items():
            if limit is None:
                out.pop(key, None)
            else:
                out[key] = (limit, "gate")
        return out

    def disabled_defaults(self) -> list[str]:
        return [k for k, v in self.max_harmful_flips.items() if v is None and k in DEFAULT_MAX_HARMFUL]

    def has_rule(self) -> bool:
        return (bool(self.flip_limits()) or any(r.has_rule() for r in self.packs.values()) or not self.packs
                or bool(self.speed) or self.min_acceptance is not None or bool(self.drift))

    def where(self, key: str = "") -> str:
        return ".".join(p for p in (self._prefix, key) if p)


def load_gate(data: Any, file: str | Path = "<gate>", prefix: str = "gate") -> GateConfig:
    """Validate a gate mapping; errors become ConfigError naming the file and key."""
    if data is None or data == {}:
        raise ConfigError("the gate is empty; remove it to use the default rules, or write rules "
                          "(packs: {'*': {max_drop: 0}}, max_harmful_flips: {amount: 0})", file=file, path=prefix or None)
    if not isinstance(data, dict):
        raise ConfigError("must be a mapping of gate rules", file=file, path=prefix or None)
    try:
        gate = GateConfig.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, file, prefix, GateConfig) from None
    gate._file, gate._prefix = str(file), prefix
    if not gate.has_rule():
        raise ConfigError("the gate has no rule left (every rule is null): it could never fail; enable at least one",
                          file=file, path=prefix or None)
    return gate


def load_gate_file(path: str | Path) -> GateConfig:
    """A gate file holds the rules at the top level or under a `gate:` key."""
    data = read_yaml(Path(path))
    if not data:
        raise ConfigError("the gate file is empty; write rules or drop --gate to use the defaults", file=path)
    return load_gate(data["gate"], path, "gate") if set(data) == {"gate"} else load_gate(data, path, "")


def check_gate(gate: GateConfig, packs: Iterable[str], field_names: Iterable[str], shapes: Iterable[str] = (),
               items: Iterable[Item] = ()) -> None:
    """Every pack, field and shape the gate names must exist in the compared runs: a typo is exit 2, not a lost rule."""
    check_shift({k: r.shift for k, r in gate.packs.items()}, gate.metric, items, gate._file, gate.where("packs"))
    packs, names, shapes = sorted(set(packs)), sorted(set(field_names)), sorted(set(shapes))

    def check_pack(pack: str | None, path: str, also: str = "") -> None:
        if pack is not None and pack not in packs:
            raise ConfigError(f"unknown pack {pack!r}{_suggest(pack, packs)}; the compared runs have: "
                              f"{', '.join(packs) or 'none'}{also}", file=gate._file, path=path)

    for i, rule in enumerate(gate.speed):
        b, where = rule.bound, gate.where(f"speed[{i}].{rule.kind}")
        check_pack(b.pack, f"{where}.pack")
        if b.shape is not None and b.shape not in shapes:
            raise ConfigError(f"unknown shape {b.shape!r}{_suggest(b.shape, shapes)}; the compared items have: "
                              f"{', '.join(shapes) or 'no latency shapes'}", file=gate._file, path=f"{where}.shape")
    for i, drift_rule in enumerate(gate.drift):
        check_pack(drift_rule.bound.pack, gate.where(f"drift[{i}].{drift_rule.kind}.pack"))
    for pack in gate.packs:
        if pack != ALL_PACKS:
            check_pack(pack, gate.where(f"packs.{pack}"), " (or '*' for every pack)")
    for key in gate.max_harmful_flips:
        if key not in FIELD_KINDS and key not in names:
            raise ConfigError(f"{key!r} is neither a field type ({', '.join(FIELD_KINDS)}) nor a field of the compared "
                              f"packs{_suggest(key, [*FIELD_KINDS, *names])}",
                              file=gate._file, path=gate.where(f"max_harmful_flips.{key}"))


def _suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _metric(pc: PackComparison, metric: str) -> tuple[float, float | None, tuple[int, int]]:
    """(delta points, CI lower bound points, (baseline hits, scope)) of the gate metric: with no baseline hit
    the candidate cannot score lower."""
    st = pc.stats
    if metric == "micro_f1":
        interval = st.f1_interval if st else None
        return pc.f1_delta_points, (100 * interval.low if interval else None), pc.baseline_found
    return pc.delta_points, (100 * st.interval.low if st else None), (pc.baseline_correct, pc.n)


def _origin(gate: GateConfig, pack: str, name: str) -> str:
    """A pack rule is the user's when the user's gate set it for this pack (or for '*')."""
    chosen = gate.packs.get(pack) or gate.packs.get(ALL_PACKS)
    user_set = chosen is not None and name in chosen.model_fields_set
    return "gate" if user_set else "default"


def _max_drop(gate: GateConfig, pc: PackComparison, cand: str, limit: float, drop: float,
              stab: Stability | None, right: int, scope: int) -> RuleResult:
    """With baseline replicates a drop past the limit fails only when backed: by re-ask-confirmed losses alone,
    by lost stable items beyond the A/A rate (one-sided Fisher), or by the pack's unstable fields pooled in
    one stratified exact test (thin evidence per field adds up). Where none could fail, it is not testable."""
    what = f"{gate.metric} drop in points (baseline - candidate)"
    over = drop > limit + 1e-9
    if stab is None or not stab.measured or not stab.aa_item_trials[pc.pack]:
        return RuleResult(cand, pc.pack, "max_drop", round(drop, 2) + 0.0, limit, not over, what,
                          _origin(gate, pc.pack, "max_drop"), baseline_right=right, in_scope=scope)
    gated = [i for i in pc.item_ids if stab.item_gated(i)]
    x = sum(1 for i in pc.lost_items() if stab.item_gated(i))
    test = FlipTest(0, 1.0 - gate.confidence, stab.aa_item_flips[pc.pack], stab.aa_item_trials[pc.pack])
    p = test.p_value(x, len(gated))
    beyond = p is not None and p < test.alpha
    reproduced = {f.item_id for f in pc.harmful if f.confirmed}
    confirmed = sum(1 for i in pc.lost_items() if i in reproduced and stab.item_gated(i))
    confirmed_drop = 100.0 * confirmed / pc.n if pc.n else 0.0
    settled = over and confirmed_drop > limit + 1e-9
    pooled = rate_test(strata(pc, stab), test.alpha)
    what += (f"; items lost of the {len(gated)} right in all {stab.replicates} baseline replicates: {x} against A/A "
             f"{test.aa_flips}/{test.aa_trials}, one-sided Fisher p = {p if p is not None else float('nan'):.3g} "
             f"(a drop fails only below {test.alpha:.3g}; {reach(test, len(gated))})")
    if confirmed:
        what += (f"; {confirmed} item(s) lost and confirmed by re-asking ({confirmed_drop:.3g} points) count fully"
                 + (": past the limit, FAIL without the noise test" if settled else ""))
    if pooled is not None:
        what += f"; pooled over the pack, {pooled.text}"
    can_fail = (test.critical(len(gated)) is not None or (gate.confirm > 0 and 100.0 * len(gated) / pc.n > limit)
                or (pooled is not None and pooled.can_fail))
    return RuleResult(cand, pc.pack, "max_drop", round(drop, 2) + 0.0, limit,
                      not (over and (beyond or settled or (pooled is not None and pooled.fails))),
                      what, _origin(gate, pc.pack, "max_drop"), baseline_right=right, in_scope=scope, p_value=p,
                      aa_flips=test.aa_flips, aa_trials=test.aa_trials,
                      cannot_fail=cannot_fail(stab, can_fail, len(gated), test, pooled))


def _min_recovery(gate: GateConfig, pc: PackComparison, cand: str, threshold: float) -> RuleResult:
    """Recovery (candidate / baseline item accuracy), decided on the lower bound of its interval."""
    what = f"lower {gate.confidence:.0%} bound of the recovery (candidate / baseline item accuracy), %"
    iv = pc.stats.recovery if pc.stats else None
    if iv is None:  # the baseline scored nothing: untestable (baseline_right 0), never a pass
        return RuleResult(cand, pc.pack, "min_recovery", float("nan"), threshold, False,
                          f"{what}: the baseline got no item right", "gate", baseline_right=pc.baseline_correct,
                          in_scope=pc.n)
    low = round(100 * iv.low, 2)
    detail = f"{what}: recovery {100 * iv.delta:.1f}% [{100 * iv.low:.1f}, {100 * iv.high:.1f}]"
    return RuleResult(cand, pc.pack, "min_recovery", low, threshold, low >= threshold, detail, "gate",
                      baseline_right=pc.baseline_correct, in_scope=pc.n)


def acceptance_rule(gate: GateConfig, cand: str, effects: dict[str, Any]) -> list[RuleResult]:
    """`min_acceptance` (opt-in) and the `min_tokens_per_step` floor (on every run that used speculative decoding);
    a run that drafted nothing has neither figure and cannot vouch for them (not evaluated)."""
    spec = effects.get("speculative")
    out = []
    for rule, key, limit, what in (
            ("min_acceptance", "acceptance_rate", gate.min_acceptance,
             "speculative decoding acceptance rate (accepted / drafted tokens, as the run recorded it)"),
            ("min_tokens_per_step", "tokens_per_target_forward", gate.min_tokens_per_step if spec is not None else None,
             "speculative decoding tokens per verification step (accepted drafts + the target's own token, as the run "
             "recorded it; 1.0: nothing accepted, a slower baseline)")):
        if limit is None:
            continue
        drafted = getattr(spec, "acceptance_rate", None) is not None  # no rate: nothing was drafted
        value = getattr(spec, key, None) if drafted else None
        origin = "gate" if rule in gate.model_fields_set else "default"
        if not isinstance(value, (int, float)):
            out.append(RuleResult(cand, ALL_PACKS, rule, float("nan"), limit, False,
                                  f"{what}: none recorded{'' if drafted else ' (no token was drafted)'}", origin,
                                  evaluated=False))
        else:
            out.append(RuleResult(cand, ALL_PACKS, rule, round(float(value), 4), limit,
                                  value >= limit if rule == "min_acceptance" else value > limit, what, origin))
    return out


def collapse_rule(gate: GateConfig, cand: str, items: Sequence[Item], base: Sequence[ScoredItem],
                  scored: Sequence[ScoredItem]) -> list[RuleResult]:
    """`collapse`: the candidate's degenerate answers against the baseline's on the same items (docs/gate.md);
    listed only when the candidate gave one (answers that are all sane have nothing to say about a collapse)."""
    if not gate.collapse:
        return []
    tally, of_id, base_of = Tally(), {it.id: it for it in items}, {b.item_id: b for b in base}
    for s in scored:
        if (b := base_of.get(s.item_id)) is not None and s.item_id in of_id and s.error is None and b.error is None:
            tally.add(of_id[s.item_id], b.output, s.output)
    if not sum(tally.cand.values()):
        return []
    failed, measured, threshold, why = tally.decide(gate.confidence)
    return [RuleResult(cand, ALL_PACKS, "collapse", float(measured), float(threshold), not failed, tally.detail(why),
                       "default")]


def check_acceptance(gate: GateConfig | None, candidate: str, acceleration: Collection[str]) -> None:
    """`min_acceptance` or a `min_tokens_per_step` other than its default on a candidate without speculative
    decoding is a configuration error (exit 2); a stored config's gate holds the default too (`report`)."""
    for key in ("min_acceptance", "min_tokens_per_step"):
        if gate is not None and getattr(gate, key) not in (None, GateConfig.model_fields[key].default) \
                and "speculative" not in acceleration:
            raise ConfigError(f"{key} needs a candidate with speculative decoding; {candidate!r} has "
                              f"{', '.join(sorted(acceleration)) or 'no acceleration'}", file=gate._file,
                              path=gate.where(key))


def check_control(gates: Iterable[GateConfig | None], control: bool) -> None:
    """`flips: flag_only` without a control run has nothing to tell the flag's flips by (exit 2)."""
    for gate in gates:
        if gate is not None and gate.flips == "flag_only" and not control:
            raise ConfigError("flips: flag_only counts only the flips a control run does not share; give one "
                              "(compare --control CTRL, report --control RUN) or set flips: all",
                              file=gate._file, path=gate.where("flips"))


def _pack_rules(gate: GateConfig, pc: PackComparison, cand: str,
                stab: Stability | None) -> tuple[list[RuleResult], FlipFindings]:
    rule = gate.pack_rule(pc.pack)
    delta, low, (right, scope) = _metric(pc, gate.metric)
    out: list[RuleResult] = []
    if rule.max_drop is not None:
        out.append(_max_drop(gate, pc, cand, rule.max_drop, -delta, stab, right, scope))
    if rule.non_inferiority is not None:
        what = f"lower {gate.confidence:.0%} bound of the {gate.metric} delta, points"
        if low is None:
            out.append(RuleResult(cand, pc.pack, "non_inferiority", float("nan"), -rule.non_inferiority, False,
                                  f"{what}: no interval could be computed", "gate", evaluated=False))
        else:
            out.append(RuleResult(cand, pc.pack, "non_inferiority", round(low, 2), -rule.non_inferiority,
                                  round(low, 2) >= -rule.non_inferiority, what, "gate",
                                  baseline_right=right, in_scope=scope))
    if rule.min_recovery is not None:
        out.append(_min_recovery(gate, pc, cand, rule.min_recovery))
    out.extend([shift_rule(rule.shift, pc, cand, gate.confidence)] if rule.shift is not None else [])
    if rule.min_items is not None:
        out.append(RuleResult(cand, pc.pack, "min_items", float(pc.n), float(rule.min_items), pc.n >= rule.min_items,
                              "paired items", "gate"))
    findings = flip_rules(gate.flip_limits(), gate.confidence, gate.power, pc, cand, stab, gate.confirm,
                          gate.flips == "flag_only")
    out.extend(findings.rules)
    if rule.detect_rate is not None:
        out.append(detect_rate_rule(rule.detect_rate, findings.power, cand))
    return out, findings


def evaluate(comparison: Comparison, gate: GateConfig | None = None, gaps: list[Gap] | None = None,
             stab: Stability | None = None, decided: list[str] | None = None,
             speed: list[RuleResult] | None = None, *, drift: Sequence[RuleResult] = (), stopped: str | None = None,
             subset: str | None = None, replicates: Sequence[str] = (), first_notes: Sequence[str] = (),
             measured: Mapping[str, MeasuredPower] | None = None) -> Verdict:
    """The verdict over the paired items, final when returned. `stab` None: every field the baseline got
    right is gated. `decided` ("pack: rule"): the candidate stopped early on these FAILs, so every other
    rule is left not evaluated, never judged on the items it happened to reach. `speed` rules count toward
    the gaps of untestable packs; `drift` rules are judged on their own. `measured`: each pack's power as a
    noise profile measured it, stated in its power line instead of the computed one alone."""
    gate = gate or GateConfig()
    rules: list[RuleResult] = []
    cand = comparison.candidate
    notes = [*(t for t in (subset, stopped) if t), *first_notes,
             *(f"max_harmful_flips[{k}] is disabled by the gate (default {DEFAULT_MAX_HARMFUL[k]})"
               for k in gate.disabled_defaults()),
             *([f"min_tokens_per_step is disabled by the gate (default {GateConfig().min_tokens_per_step}): a "
                "speculative drafter that accepts nothing can pass"] if gate.min_tokens_per_step is None else []),
             *(["collapse is disabled by the gate (default on): degenerate answers are judged by the other rules alone, "
                "and the early stop has no canary"] if not gate.collapse else [])]
    if stab is not None and stab.measured:
        notes.append(stab.summary())
    power: dict[str, PackPower] = {}
    noise: list[Flip] = []
    unconfirmed: list[Flip] = []
    for pc in comparison.packs:
        if pc.speed_only:
            # nothing scored: no accuracy rule applies, but a candidate that fails to generate still fails
            rules.append(RuleResult(cand, pc.pack, "errors", float(pc.errors), 0.0, pc.errors == 0,
                                    "items whose generation raised (speed-only pack: no fields to score)", "default"))
            notes.append(f"{pc.pack}: speed only (items ask for no fields): no accuracy rules")
            continue
        pack_rules, findings = _pack_rules(gate, pc, cand, stab)
        rules.extend(pack_rules)
        noise.extend(findings.noise)
        unconfirmed.extend(findings.unconfirmed)
        if findings.power.scopes:
            power[pc.pack] = replace(findings.power, measured=(measured or {}).get(pc.pack))
            notes.append(power[pc.pack].sentence)
    if attributed := [f for f in comparison.harmful if f.in_control is not None]:
        shared = sum(bool(f.in_control) for f in attributed)
        notes.append(f"{len(attributed)} harmful flip(s), {shared} also in the control ("
                     + ("not counted by the flip rules: flips: flag_only)" if gate.flips == "flag_only"
                        else "counted: flips: all; flag_only counts the flag's own)"))
    if comparison.missing_in_baseline:
        notes.append(f"{len(comparison.missing_in_baseline)} candidate item(s) have no baseline answer")
    for pc in comparison.packs:
        if pc.stats and pc.stats.mde is not None:
            rule = gate.pack_rule(pc.pack)
            threshold = rule.non_inferiority if rule.non_inferiority is not None else rule.max_drop
            if threshold is not None and threshold > 0 and 100 * pc.stats.mde > threshold:
                notes.append(
                    f"{pc.pack}: {pc.n} items can only detect a difference of about {100 * pc.stats.mde:.1f} points; "
                    f"the threshold of {threshold:g} points needs more items"
                )
    rules.extend(speed or [])
    if decided is not None:
        for r in rules:
            if f"{r.pack}: {r.rule}" not in decided and r.evaluated and r.status in ("pass", "fail"):
                r.evaluated = False
                r.detail += "; not decided: the candidate stopped early"
    all_gaps = [*(gaps or []), *untestable_gaps(rules),
                *no_rule_gaps((pc.pack for pc in comparison.packs if pc.n), rules)]
    if not rules and not all_gaps:
        all_gaps.append(Gap(ALL_PACKS, "no gate rule applied to any paired pack: nothing was checked"))
    return Verdict(cand, [*rules, *drift], notes, all_gaps, power=power, noise_flips=noise, unconfirmed=unconfirmed,
                   stopped=stopped, replicates=list(replicates), subset=subset)
