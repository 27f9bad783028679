"""Drift on items that could not be measured: a record holding a NaN or infinite logprob gives no figure
(the table never shows `nan [nan, nan]`; its note names the item and the token), a baseline alternative
of probability 0 adds nothing (0 log 0), and a drift rule over a scope with an item not measured (a read
that stopped, a NaN) is not decided: exit 4 naming the gate file and key, never a pass on the rest."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np

from evalrun.contract.types import Item
from evalrun.evals.drift._drift import compute, token_drift
from evalrun.evals.drift.rules import evaluate_drift
from evalrun.evals.gate import load_gate
from evalrun.evals.gate._verdict import EXIT_CODES
from evalrun.reports.text import drift_text
from evalrun.runners.logprobs import ForcedDists, TokenDists
from tests.fakes.runs import answered

N, K = 4, 3


def _base() -> TokenDists:
    top = np.log(np.tile([0.9, 0.06, 0.03], (N, 1))).astype(np.float32)
    return TokenDists(ids=np.arange(N, dtype=np.int32), logprob=top[:, 0].copy(),
                      top_ids=np.stack([np.arange(N), np.arange(N) + 10, np.arange(N) + 20], 1).astype(np.int32),
                      top_logprobs=top, rest_logprob=np.full(N, math.log(0.01), np.float32))


def _forced(shift: float) -> ForcedDists:
    at = np.log(np.tile([0.9 - shift, 0.06 + shift, 0.03], (N, 1))).astype(np.float32)
    return ForcedDists(at_base_top=at, rest_logprob=np.full(N, math.log(0.01), np.float32), token_logprob=at[:, 0].copy(),
                       top1_id=np.arange(N, dtype=np.int32), top1_logprob=at[:, 0].copy())


def _drift(forced: dict[int, ForcedDists | None], items: int = 6) -> Any:
    its = [Item(id=f"p/{i}", pack="p", prompt=f"q{i}", fields=[]) for i in range(items)]
    gens = {it.id: answered(it, new_tokens=N, seconds=0.1) for it in its}
    base = {it.id: _base() for it in its}
    cand = {f"p/{i}": rec for i, rec in forced.items() if rec is not None}
    return compute("cand", its, base, cand, SimpleNamespace(harmful=[]), gens, gens)  # type: ignore[arg-type]


def test_a_record_with_a_nan_is_not_measured_and_the_table_says_why() -> None:
    recs: dict[int, ForcedDists | None] = {i: _forced(0.01 * (i + 1)) for i in range(6)}
    broken = _forced(0.02)
    broken.at_base_top[2, 1] = np.nan  # a candidate whose logits overflowed at one token
    recs[4] = broken
    drift = _drift(recs)
    cells = " ".join(" ".join(r) for r in drift_text.rows(drift))
    assert "nan" not in cells.lower() and drift.overall.items == 5
    assert drift.unscored == {"p/4": "token 2's KL is not a number (a NaN or infinite logprob in a record)"}
    assert any("item p/4: token 2's KL is not a number" in n for n in drift_text.notes(drift))


def test_a_baseline_alternative_of_probability_zero_adds_nothing() -> None:
    base = _base()
    base.top_logprobs[:, 2] = -np.inf  # vLLM's top-k past the tokens a model gives any mass
    kl = token_drift(base, _forced(0.01)).kl
    assert np.isfinite(kl).all() and (kl > 0).all()


def test_a_rule_over_items_not_all_measured_is_not_decided() -> None:
    """Five items read, one not (the read stopped there): the interval over the five is well within the
    limit, but the sixth could hold any drift, so the rule is incomplete (exit 4), naming file, key and item."""
    recs: dict[int, ForcedDists | None] = {i: _forced(0.01 * (i + 1)) for i in range(5)}
    drift = _drift(recs)
    gate = load_gate({"drift": [{"max_kl": {"mean": 10.0}}, {"max_kl": {"mean": 1e-9}}]}, file="ci/gate.yaml")
    loose, tight = evaluate_drift(gate, "cand", drift, None, {f"p/{i}": "p" for i in range(6)})
    for r in (loose, tight):
        assert r.status == "incomplete" and EXIT_CODES[r.status] == 4
        assert "not decided: ci/gate.yaml: gate.drift[" in r.detail
        assert "1 paired item(s) in scope not measured (first: item p/5: no usable teacher-forced record)" in r.detail
    everything = _drift({i: _forced(0.01 * (i + 1)) for i in range(6)})
    loose, tight = evaluate_drift(gate, "cand", everything, None, {f"p/{i}": "p" for i in range(6)})
    assert (loose.status, tight.status) == ("pass", "fail")
