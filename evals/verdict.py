"""The verdict: one answer to "did this candidate, and each of its packs, pass",
computed once so every renderer (terminal, Markdown, JUnit, JSON, HTML) says
the same thing.

A verdict fails closed. Three statuses, worst first:

- ``fail``: a rule evaluated on paired items failed (a regression was found);
- ``incomplete``: nothing failed, but the verdict cannot vouch for the
  candidate: items it asked for could not be paired (missing, unreadable or
  refused generations on either side), a rule could not be evaluated, or no
  rule applied at all;
- ``pass``: every rule was evaluated on every item the candidate asked for.

A regression outranks a gap: a harmful flip found on the items that could be
paired is a finding whatever the missing items would have shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Literal

Status = Literal["pass", "fail", "incomplete"]

# Exit codes of `compare`, `report` and `sweep`; 2 (usage) and 3 (runtime) come from the CLI.
EXIT_CODES: dict[str, int] = {"pass": 0, "fail": 1, "incomplete": 4}
STATUS_TEXT: dict[str, str] = {"pass": "PASS", "fail": "FAIL", "incomplete": "INCOMPLETE"}
ALL_PACKS = "*"


@dataclass
class RuleResult:
    """One gate rule measured on one pack. `evaluated` False: the rule could not be
    computed (no statistics for that pack, say): never a pass."""

    candidate: str
    pack: str
    rule: str
    measured: float
    threshold: float
    passed: bool
    detail: str = ""
    origin: str = "gate"  # "default" (evalrun's built-in rule) or "gate" (the user's gate)
    evaluated: bool = True

    @property
    def comparator(self) -> str:
        return ">=" if self.rule in ("min_items", "non_inferiority") else "<="

    @property
    def status(self) -> Status:
        if not self.evaluated:
            return "incomplete"
        return "pass" if self.passed else "fail"


@dataclass
class Gap:
    """Something the verdict cannot vouch for, with where it came from."""

    pack: str  # ALL_PACKS for the comparison as a whole
    reason: str
    items: int = 0  # items affected, when it is about items


def worst(statuses: Iterable[str]) -> Status:
    """fail > incomplete > pass; nothing at all is incomplete, never a pass."""
    seen = set(statuses)
    if not seen:
        return "incomplete"
    if "fail" in seen:
        return "fail"
    return "incomplete" if "incomplete" in seen else "pass"


@dataclass
class Verdict:
    candidate: str
    rules: list[RuleResult]
    notes: list[str]
    gaps: list[Gap] = field(default_factory=list)

    @property
    def status(self) -> Status:
        return worst([*(r.status for r in self.rules), *("incomplete" for _ in self.gaps)])

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def failed(self) -> list[RuleResult]:
        """Rules that were evaluated and failed."""
        return [r for r in self.rules if r.status == "fail"]

    @property
    def unevaluated(self) -> list[RuleResult]:
        return [r for r in self.rules if not r.evaluated]

    @property
    def rules_passed(self) -> int:
        return sum(r.status == "pass" for r in self.rules)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def pack_status(self, pack: str) -> Status:
        """The pack's own rules and gaps, plus those about the whole comparison."""
        return worst([*(r.status for r in self.rules if r.pack in (pack, ALL_PACKS)),
                      *("incomplete" for g in self.gaps if g.pack in (pack, ALL_PACKS))])

    def pack_gaps(self, pack: str) -> list[Gap]:
        return [g for g in self.gaps if g.pack == pack]

    def summary(self) -> str:
        """'3/4 rules passed' with what else holds the verdict back, for one-line renderers."""
        text = f"{self.rules_passed}/{len(self.rules)} rules passed"
        if self.unevaluated:
            text += f", {len(self.unevaluated)} could not be evaluated"
        if self.gaps:
            text += f", {len(self.gaps)} gap(s) in the data"
        return text


def overall_status(verdicts: Iterable[Verdict]) -> Status:
    return worst(v.status for v in verdicts)


def overall_exit_code(verdicts: Iterable[Verdict]) -> int:
    return EXIT_CODES[overall_status(verdicts)]
