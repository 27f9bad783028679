"""Effective length (NoLiMa's 85% rule on the project's context-length buckets, and the candidate's mean KL
under the A/A drift's upper bound) and the A/A floor attached to a candidate's drift."""

from __future__ import annotations

import numpy as np

from evalrun.contract.types import ItemMeta
from evalrun.evals.drift import Drift, Figure, PackDrift, TokenDrift
from evalrun.evals.drift.runs import attach_floor
from evalrun.evals.drift._drift import NO_FLOOR, effective_length
from evalrun.evals.scoring import ScoredItem
from evalrun.reports.text import drift_text
from tests.fakes.runs import scored


def _run(acc: dict[int, int], n: int = 10) -> list[ScoredItem]:
    """`acc[length]` of `n` items right at each length."""
    return [scored(f"n/{length}-{i}", {"v": "correct" if i < right else "wrong_value"}, kinds="number",
                   meta=ItemMeta(target_tokens=length)) for length, right in acc.items() for i in range(n)]


def _drift(scored: list[ScoredItem], kl_at: dict[int, float]) -> Drift:
    per_item = {s.item_id: TokenDrift(np.full(4, kl_at[s.meta.target_tokens or 0]), np.ones(4, bool), np.zeros(4),
                                      np.ones(4)) for s in scored}
    return Drift("cand", [], None, per_item=per_item)


def _figure(high: float) -> Figure:
    return Figure(high / 2, 0.0, high)


def test_accuracy_rule_on_the_project_buckets() -> None:
    base = _run({512: 10, 1024: 10, 2048: 9, 4096: 9})
    cand = _run({512: 10, 1024: 9, 2048: 8, 4096: 9})  # 2k: 80% < 85% of 100%: stops at 1k, 4k does not count
    eff = effective_length("cand", cand, base, _drift(cand, {512: 0, 1024: 0, 2048: 0, 4096: 0}))
    assert [b.label for b in eff.buckets] == ["<=512", "<=1k", "<=2k", "<=4k"]
    assert eff.length == "<=1k" and eff.baseline_length == "<=4k"
    assert eff.kl_bound is None and NO_FLOOR in eff.text
    assert eff.text.endswith("<=1k, baseline <=4k")


def test_kl_over_the_aa_bound_shortens_it() -> None:
    base = _run({512: 10, 1024: 10, 2048: 10})
    cand = _run({512: 10, 1024: 10, 2048: 10})
    drift = _drift(cand, {512: 0.001, 1024: 0.002, 2048: 0.5})
    drift.floor = {"all": _figure(0.01)}
    eff = effective_length("cand", cand, base, drift)
    assert eff.length == "<=1k" and eff.baseline_length == "<=2k"
    assert [b.kl_ok for b in eff.buckets] == [True, True, False]
    assert "mean KL <= 0.01 (the A/A drift's upper bound)" in eff.text
    drift.floor = {"all": _figure(1.0)}
    assert effective_length("cand", cand, base, drift).length == "<=2k"
    drift.floor = {"all": _figure(0.0001)}  # even the shortest bucket moves more than the noise
    assert "none (the shortest bucket already fails)" in effective_length("cand", cand, base, drift).text


def _pack(name: str, mean: Figure) -> PackDrift:
    return PackDrift(name, 3, 30, mean, 0.1, 0.2, Figure(1, 1, 1), Figure(0, 0, 0))


def test_the_aa_floor_sits_beside_the_candidate_kl_in_every_row() -> None:
    cand = Drift("cand", [_pack("a", Figure(0.5, 0.4, 0.6)), _pack("b", Figure(0.2, 0.1, 0.3))],
                 _pack("all", Figure(0.35, 0.2, 0.5)))
    aa = Drift("base#2", [_pack("a", Figure(0.001, 0.0, 0.002))], _pack("all", Figure(0.0005, 0.0, 0.001)))
    attach_floor(cand, aa)
    assert cand.floor_run == "base#2" and set(cand.floor) == {"a", "all"}
    rows = drift_text.rows(cand)
    col = drift_text.HEADERS.index("A/A mean KL (95% CI)")
    assert drift_text.HEADERS[col - 1] == "mean KL (95% CI)"
    assert [r[col] for r in rows] == ["0.001 [0, 0.002]", "–", "0.0005 [0, 0.001]"]
    data = drift_text.drift_dict(cand)
    assert data["aa_floor"]["a"] == {"value": 0.001, "low": 0.0, "high": 0.002} and data["aa_floor_run"] == "base#2"
