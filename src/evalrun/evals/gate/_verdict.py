"""The verdict: one answer to "did this candidate, and each of its packs, pass", computed once so every
renderer (terminal, Markdown, JUnit, JSON, HTML) says the same thing.

It fails closed (fail > incomplete > pass): a rule no candidate could fail is `untestable`, never a pass, and a
regression outranks a gap (docs/gate.md, 'Rules that cannot fail'; docs/commands.md, 'Exit codes')."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Literal

Status = Literal["pass", "fail", "incomplete"]
RuleStatus = Literal["pass", "fail", "incomplete", "untestable"]

# Exit codes of `compare`, `report` and `sweep`; 2 (usage) and 3 (runtime) come from the CLI.
EXIT_CODES: dict[str, int] = {"pass": 0, "fail": 1, "incomplete": 4}
STATUS_TEXT: dict[str, str] = {"pass": "PASS", "fail": "FAIL", "incomplete": "INCOMPLETE",
                               "untestable": "NOT TESTABLE"}
ALL_PACKS = "*"
NOTHING_COULD_FAIL = "no rule here could fail: the baseline got none of it right"
NO_RULE = "no gate rule applies to this pack (the gate disables every one): nothing in it was checked"
SUBSET_TEXT = "SUBSET: only the items both runs asked"
INCOMPLETE_NOTE = ("Nothing failed, but the verdict cannot vouch for every candidate: items of the baseline's plan "
                   "could not be paired, a pack had no rule, a rule could not be evaluated, or no rule could fail. "
                   "This is not a pass.")


@dataclass
class RuleResult:
    """One gate rule measured on one pack. `evaluated` False: it could not be computed, never a pass.
    `baseline_right` of `in_scope`: what the baseline got right of the rule's scope (None: the rule can
    always fail, as min_items and errors can); 0 makes the rule untestable."""

    candidate: str
    pack: str
    rule: str
    measured: float
    threshold: float
    passed: bool
    detail: str = ""
    origin: str = "gate"  # "default" (evalrun's built-in rule) or "gate" (the user's gate)
    evaluated: bool = True
    baseline_right: int | None = None
    in_scope: int = 0
    # a harmful-flip rule tested against the noise: its one-sided p-value and the A/A counts
    p_value: float | None = None
    aa_flips: int | None = None
    aa_trials: int | None = None
    # what a rule that is not met makes of the verdict: "fail" (a regression), or "incomplete"
    # (detect_rate: the pack is too small to vouch for, which is no finding either way)
    on_fail: RuleStatus = "fail"
    items_needed: int | None = None
    # why no candidate could fail this rule although the baseline got its scope right (the noise test
    # can reject no outcome on these fields); "" when some outcome fails it
    cannot_fail: str = ""

    @property
    def comparator(self) -> str:
        if self.rule == "min_tokens_per_step":  # a floor: at it, the candidate fails
            return ">"
        at_least = self.rule in ("min_items", "non_inferiority", "min_recovery", "min_acceptance") or self.rule.startswith(
            ("min_speedup", "max_regression", "min_goodput", "min_top1_agreement"))
        return ">=" if at_least else "<="

    @property
    def status(self) -> RuleStatus:
        if not self.evaluated:
            return "incomplete"
        if self.baseline_right == 0 or self.cannot_fail:
            return "untestable"
        return "pass" if self.passed else self.on_fail

    @property
    def untestable_reason(self) -> str:
        """The one wording of an untestable rule, in every output."""
        return f"not testable here ({self.cannot_fail or f'baseline 0 of {self.in_scope}'})"


@dataclass
class Gap:
    """Something the verdict cannot vouch for, with where it came from."""

    pack: str  # ALL_PACKS for the comparison as a whole
    reason: str
    items: int = 0  # items affected, when it is about items


def worst(statuses: Iterable[str]) -> Status:
    """fail > incomplete > pass; nothing at all, or only rules that could not fail, is incomplete, never a pass."""
    seen = set(statuses) - {"untestable"}
    return "fail" if "fail" in seen else "incomplete" if "incomplete" in seen or not seen else "pass"


def untestable_gaps(rules: Iterable[RuleResult]) -> list[Gap]:
    """A gap per pack whose every rule is untestable, and per rule the noise test left unable to fail."""
    by_pack: dict[str, list[RuleResult]] = {}
    rules = list(rules)
    for r in rules:
        by_pack.setdefault(r.pack, []).append(r)
    return [*(Gap(pack, NOTHING_COULD_FAIL) for pack, rs in by_pack.items()
              if all(r.status == "untestable" for r in rs)),
            *(Gap(r.pack, f"{r.rule}: {r.untestable_reason}") for r in rules
              if r.cannot_fail and r.status == "untestable")]


def no_rule_gaps(packs: Iterable[str], rules: Iterable[RuleResult]) -> list[Gap]:
    """A gap for each paired pack no rule applies to: its row could never fail, so the verdict may not pass."""
    covered = {r.pack for r in rules}
    return [] if ALL_PACKS in covered else [Gap(pack, NO_RULE) for pack in dict.fromkeys(packs) if pack not in covered]


def count_rules(rules: Iterable[RuleResult], gaps: int = 0, subset: int = 0) -> dict[str, int]:
    """Rule counts by status, detect_rate's "too small" (underpowered) apart; `subset` only when nonzero."""
    rules = list(rules)
    statuses = [r.status for r in rules]
    short = sum(1 for r in rules if r.evaluated and r.status == "incomplete")
    return {"rules": len(rules), "passed": statuses.count("pass"), "failed": statuses.count("fail"),
            "untestable": statuses.count("untestable"), "not_evaluated": statuses.count("incomplete") - short,
            "underpowered": short, "gaps": gaps, **({"subset": subset} if subset else {})}


def counts_text(counts: dict[str, int]) -> str:
    """'3 of 5 rules passed, 1 failed, 1 not testable here': the one wording in every output (zero parts left out)."""
    parts = [SUBSET_TEXT] if counts.get("subset") else []
    parts.append(f"{counts['passed']} of {counts['rules']} rules passed")
    for key, words in (("failed", "failed"), ("untestable", "not testable here"),
                       ("not_evaluated", "could not be evaluated"), ("underpowered", "too small to vouch for"),
                       ("gaps", "gap(s) in the data")):
        if counts[key]:
            parts.append(f"{counts[key]} {words}")
    return ", ".join(parts)


@dataclass(frozen=True)
class Verdict:
    """Built once by evals.gate.evaluate and never edited after."""

    candidate: str
    rules: list[RuleResult]
    notes: list[str]
    gaps: list[Gap] = field(default_factory=list)
    # per pack: what its harmful-flip rules can detect (evals.gate._flip_rules.PackPower)
    power: dict[str, Any] = field(default_factory=dict)
    # harmful flips no rule counted: on fields unstable at baseline, or not reproduced when re-asked
    noise_flips: list[Any] = field(default_factory=list)
    unconfirmed: list[Any] = field(default_factory=list)
    # "stopped at k of n items" when the candidate stopped early on a decided FAIL
    stopped: str | None = None
    # the baseline replicate runs (directory names) the gate measured the noise with; [] for none
    replicates: list[str] = field(default_factory=list)
    # with --subset: what of the baseline's plan the verdict was not judged on (evals.gate.subset_text)
    subset: str | None = None

    @property
    def status(self) -> Status:
        return worst([*(r.status for r in self.rules), *("incomplete" for _ in self.gaps)])

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def failed(self) -> list[RuleResult]:
        return [r for r in self.rules if r.status == "fail"]

    @property
    def unevaluated(self) -> list[RuleResult]:
        """Rules that cannot vouch for the candidate: not computed, or a pack too small (detect_rate)."""
        return [r for r in self.rules if r.status == "incomplete"]

    @property
    def untestable(self) -> list[RuleResult]:
        """Rules no candidate could fail here (the baseline got none of their scope right)."""
        return [r for r in self.rules if r.status == "untestable"]

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def pack_status(self, pack: str) -> Status:
        """The pack's own rules and gaps, plus those about the whole comparison."""
        return worst([*(r.status for r in self.rules if r.pack in (pack, ALL_PACKS)),
                      *("incomplete" for g in self.gaps if g.pack in (pack, ALL_PACKS))])

    def pack_gaps(self, pack: str) -> list[Gap]:
        return [g for g in self.gaps if g.pack == pack]

    def rule_counts(self) -> dict[str, int]:
        return count_rules(self.rules, len(self.gaps), int(self.subset is not None))

    def summary(self) -> str:
        return counts_text(self.rule_counts())


def overall_counts(verdicts: Iterable[Verdict]) -> dict[str, int]:
    verdicts = list(verdicts)
    return count_rules([r for v in verdicts for r in v.rules], sum(len(v.gaps) for v in verdicts),
                       sum(v.subset is not None for v in verdicts))


def overall_summary(verdicts: Iterable[Verdict]) -> str:
    return counts_text(overall_counts(verdicts))


def overall_status(verdicts: Iterable[Verdict]) -> Status:
    return worst(v.status for v in verdicts)


def overall_exit_code(verdicts: Iterable[Verdict]) -> int:
    return EXIT_CODES[overall_status(verdicts)]
