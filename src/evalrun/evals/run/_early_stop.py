"""Stopping a candidate once its FAIL is decided (docs/gate.md, 'Noise, confirmation, power and early stop').
The baseline is complete first, so each flip rule's final scope n is known; the flips seen so far fail it even
if every field still to come were right, since the flip count only grows and flipless fields only raise the
p-value. Refuted flips do not count; flips not re-asked yet count provisionally, confirmed before the stop
holds."""

from __future__ import annotations

from collections import Counter

from evalrun.contract.errors import EvalrunError
from evalrun.contract.manifest import RunManifest
from evalrun.contract.types import Generation, Item
from evalrun.evals.compare import length_bucket
from evalrun.evals.gate import ALL_PACKS, rule_key
from evalrun.evals.stats import FlipTest
from evalrun.evals.scoring import FieldKey, ScoredItem, Stability, score_item
from evalrun.evals.scoring.degenerate import Tally

RuleId = tuple[str, str]  # (pack, rule key)


class StopGeneration(EvalrunError):
    """Raised from a run's emit callback: the candidate's FAIL is decided."""


class EarlyStop:
    """Watches a candidate's generations, one at a time, against the complete baseline."""

    def __init__(self, baseline: list[ScoredItem], items: list[Item], limits: dict[str, tuple[int, str]],
                 confidence: float, stab: Stability, collapse: bool = True) -> None:
        self.base = {s.item_id: s for s in baseline}
        self.collapse = collapse  # the gate's `collapse` rule, and with it the canary's ordering (_execute.py)
        self.items = {it.id: it for it in items}
        self.stab, self.confidence, self.tally = stab, confidence, Tally()
        self.refuted: set[FieldKey] = set()
        self.flipped: dict[FieldKey, RuleId] = {}
        self.seen: set[str] = set()
        self.names: dict[str, set[str]] = {}
        for it in items:
            self.names.setdefault(it.pack, set()).update(f.name for f in it.fields)
        self.limits = limits
        self.fields: Counter = Counter()  # RuleId -> gated fields over all the candidate's items
        for it in items:
            base = self.base.get(it.id)
            if base is None:  # no baseline answer: no gated field
                continue
            for key in self._gated_fields(base):
                self.fields[self._rule(base, key)] += 1
        scopes = {(b.pack, n, k) for b in self.base.values() for n, k in b.kinds.items()}
        self.tests: dict[RuleId, FlipTest] = {}
        for pack, key in self.fields:
            y, m = 0, 0
            if stab.measured:  # the A/A counts of the rule's scope, as flip_rules takes them
                y, m = stab.aa_counts([s for s in scopes if s[0] == pack and self._key_of(*s) == key])
            self.tests[(pack, key)] = FlipTest(limits[key][0], 1.0 - confidence, y, m)

    def _key_of(self, pack: str, name: str, kind: str) -> str | None:
        return rule_key(name, kind, self.limits, self.names.get(pack, set()))

    def _rule(self, base: ScoredItem, name: str) -> RuleId:
        return (base.pack, self._key_of(base.pack, name, base.kinds[name]) or "")

    def _gated_fields(self, base: ScoredItem | None) -> list[str]:
        """The fields of a baseline item a flip rule counts a flip on (stable and right at baseline)."""
        if base is None:
            return []
        return [name for name in base.fields
                if self.stab.gated(base.item_id, name) and self._key_of(base.pack, name, base.kinds[name])]

    def observe(self, gen: Generation) -> bool:
        """Take one generation; True when some rule's FAIL is now decided."""
        base, item = self.base.get(gen.item_id), self.items.get(gen.item_id)
        if base is not None and item is not None and gen.item_id not in self.seen:
            self.seen.add(gen.item_id)
            cand = score_item(item, gen)
            if gen.error is None and base.error is None:
                self.tally.add(item, base.output, gen.output)
            for name in self._gated_fields(base):
                if not cand.field_right(name):
                    self.flipped[(gen.item_id, name)] = self._rule(base, name)
        return bool(self.decided())

    def refute(self, keys: set[FieldKey]) -> None:
        """Flips a re-ask did not reproduce: they no longer count."""
        self.refuted |= keys

    def decided(self) -> list[str]:
        """'pack: rule' for each rule that the full run is sure to fail."""
        flips: Counter = Counter(rule for key, rule in self.flipped.items() if key not in self.refuted)
        return [f"{pack}: max_harmful_flips[{key}]" for (pack, key), x in sorted(flips.items())
                if self.tests[(pack, key)].fails(x, self.fields[(pack, key)])] + (
            [f"{ALL_PACKS}: collapse"] if self.collapse and self.tally.decide(self.confidence)[0] else [])

    @staticmethod
    def canary(items: list[Item]) -> list[list[Item]]:
        """`items` in two parts: the first of each (pack, length bucket, depth in quarters) cell, then the rest, each
        in plan order, so a collapse at one length or depth shows in the first generations (docs/gate.md)."""
        cells: dict[tuple[str, str | None, int | None], Item] = {}
        for it in items:
            tokens, depth = it.meta.target_tokens or it.meta.context_tokens, it.meta.depth
            depth = it.meta.field_depth if depth is None else depth
            quarter = None if depth is None else round(depth * 4)
            cells.setdefault((it.pack, length_bucket(tokens) if tokens else None, quarter), it)
        first = {it.id for it in cells.values()}
        return [part for part in ([it for it in items if it.id in first], [it for it in items if it.id not in first])
                if part]


def stopped_text(manifest: RunManifest) -> str | None:
    """"stopped at k of n items" for a candidate that stopped early, with what it decided."""
    stop = manifest.early_stop
    if manifest.status != "stopped" or stop is None:
        return None
    saved = f"; about {stop.seconds_saved:.0f} s of generation saved" if stop.seconds_saved else ""
    return (f"stopped at {stop.at} of {stop.of} items: the FAIL was decided ({'; '.join(stop.rules)}){saved}; "
            "--no-early-stop runs the rest")
