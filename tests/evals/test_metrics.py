"""Metrics counted by hand: a wrong value is one FP and one FN, a drop one FN, a
hallucinated decoy one FP; pairing finds flips and refuses different prompts."""

from __future__ import annotations

import pytest

from evalrun.evals.scoring import ScoredItem, pack_metrics, score_item
from evalrun.evals.compare import PairingError, pair
from evalrun.contract.types import Field, Item
from tests.fakes.runs import answered, scored


def _scored(item_id: str, outcomes: dict[str, tuple[str, str | None]], pack: str = "p", prompt_hash: str = "h",
            parse: str | None = None) -> ScoredItem:
    return scored(item_id, {k: o for k, (o, _) in outcomes.items()}, golds={k: g for k, (_, g) in outcomes.items()},
                  pack=pack, prompt_hash=prompt_hash, parse_status=parse)


def test_counts_and_rates_by_hand() -> None:
    scored = [
        _scored("1", {"total": ("correct", "1"), "tax": ("wrong_value", "2"), "po": ("correct_absent", None)}, parse="strict"),
        _scored("2", {"total": ("missing", "1"), "tax": ("correct", "2"), "po": ("hallucinated", None)}, parse="repaired"),
        _scored("3", {"total": ("correct", "1"), "tax": ("near_match", "2"), "po": ("correct_absent", None)}, parse="strict"),
    ]
    pm = pack_metrics(scored)["p"]
    m = pm.micro
    # TP: total x2 + tax x1 = 3; FP: tax wrong + tax near + po halluc = 3; FN: tax wrong + total missing + tax near = 3
    assert (m.tp, m.fp, m.fn) == (3, 3, 3)
    assert m.precision == pytest.approx(0.5) and m.recall == pytest.approx(0.5) and m.f1 == pytest.approx(0.5)
    assert m.drop_rate == pytest.approx(1 / 6) and m.wrong_rate == pytest.approx(2 / 6)
    assert m.hallucination_rate == pytest.approx(1 / 3)
    assert pm.exact_match == 0 and pm.items == 3
    total = pm.fields["total"]
    assert (total.tp, total.fp, total.fn) == (2, 0, 1)
    assert total.f1 == pytest.approx(0.8) and total.accuracy == pytest.approx(2 / 3)
    tax = pm.fields["tax"]
    assert tax.f1 == pytest.approx(1 / 3)
    assert pm.macro_f1 == pytest.approx((0.8 + 1 / 3) / 2), "decoy-only fields have no F1 and are left out"
    assert dict(pm.parse_status) == {"strict": 2, "repaired": 1}


def test_errors_drop_every_gold_field_but_invent_nothing() -> None:
    pm = pack_metrics([_scored("1", {"a": ("error", "1"), "b": ("error", None)})])["p"]
    assert (pm.micro.tp, pm.micro.fp, pm.micro.fn) == (0, 0, 1)


def test_json_answer_scoring_and_parse_failure() -> None:
    item = Item(id="d/1", pack="d", prompt="q", meta={"answer_format": "json"},
                fields=[Field(name="total", kind="amount", gold="EUR 14851.20"),
                        Field(name="discount", kind="amount", gold=None)])

    def run(output: str) -> ScoredItem:
        return score_item(item, answered(item, output))

    ok = run('```json\n{"total": "EUR 14,851.20", "discount": null}\n```')
    assert ok.parse_status == "fenced" and ok.correct
    dropped = run('{"total": "EUR 14,85.20", "discount": "EUR 5.00"}')
    assert dropped.fields["total"].outcome == "wrong_value" and dropped.fields["discount"].outcome == "hallucinated"
    broken = run("I cannot answer that.")
    assert broken.parse_status == "failed"
    # nothing readable says the discount is not given: the decoy is missing too
    assert broken.fields["total"].outcome == "missing" and broken.fields["discount"].outcome == "missing"
    cut = run('{"discount": null, "total": "EUR 14,8')
    assert cut.parse_status == "truncated" and cut.suspect_field == "total"
    assert "suspect" in (cut.fields["total"].detail or "")


def test_pairing_finds_harmful_and_helpful_flips() -> None:
    base = [_scored("1", {"v": ("correct", "1")}), _scored("2", {"v": ("wrong_value", "1")}), _scored("3", {"v": ("correct", "1")})]
    cand = [_scored("1", {"v": ("wrong_value", "1")}), _scored("2", {"v": ("correct", "1")}), _scored("3", {"v": ("correct", "1")})]
    cmp = pair(base, cand, "b", "c")
    (pc,) = cmp.packs
    assert pc.n == 3 and pc.harmful_items == 1 and len(pc.helpful) == 1
    assert cmp.harmful[0].item_id == "1" and pc.delta_points == pytest.approx(0.0)


def test_pairing_refuses_different_prompts_and_reports_missing_items() -> None:
    with pytest.raises(PairingError, match="different prompts"):
        pair([_scored("1", {"v": ("correct", "1")})], [_scored("1", {"v": ("correct", "1")}, prompt_hash="other")], "b", "c")
    cmp = pair([_scored("1", {"v": ("correct", "1")}), _scored("2", {"v": ("correct", "1")})],
               [_scored("1", {"v": ("correct", "1")})], "b", "c")
    assert cmp.missing_in_candidate == ["2"]
