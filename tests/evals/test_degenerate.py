"""The degenerate-answer classes (evals/scoring/degenerate.py) and the `collapse` decision on a Tally: each class
on the answers a broken engine gives, none on the answers a sane model gives for every field type, and a
decision that an A/A pair (the same answers on both sides) can never fail."""

from __future__ import annotations

import pytest

from evalrun.contract.types import Field, Item
from evalrun.evals.scoring.degenerate import HARD_K, Tally, degenerate

DOC = ("INVOICE INV-2022-0416. Issued by Alpine Trading AG, Bahnhofstrasse 12, 8001 Zurich, to Meridian Foods Ltd. "
       "The services described below were delivered in full during the month of March and are billed in Swiss "
       "francs according to the framework agreement signed by both parties last year. Subtotal: CHF 1,343.18. "
       "VAT 8.1%: CHF 108.35. Total amount due: CHF 1,451.53. Payment is due on 2022-04-16. The outstanding balance "
       "for the Quito account is EUR 77,980.08.")


def _item(kind: str = "amount", gold: str | None = "CHF 1451.53", question: str = "What is the total amount due?",
          fields: bool = True) -> Item:
    return Item(id=f"doc_fields/inv-1-{kind}", pack="doc_fields", prompt=f"{DOC}\n\n{question}", context=DOC,
                question=question, answer_format="text",
                fields=[Field(name="total", kind=kind, gold=gold)] if fields else [])  # type: ignore[arg-type]


# what a sane model answers, field type by field type (the smollm2 baseline's shapes)
SANE = [
    ("amount", "CHF 1,451.53"),
    ("amount", "The total amount due is CHF 1,451.53."),
    ("number", "The total is 12."),
    ("number", "8.1%"),
    ("date", "2022-04-16"),
    ("date", "Payment is due on April 16, 2022."),
    ("id", "INV-2022-0416"),
    ("text", "Meridian Foods Ltd"),
    ("text", "Alpine Trading AG, Bahnhofstrasse 12, 8001 Zurich"),
    ("enum", "paid"),
    ("amount", "1,000,000"),
    ("id", "1111"),
    ("amount", "CHF 1,451.53 (subtotal CHF 1,343.18 plus VAT CHF 108.35)"),
    # the needle's own sentence, quoted whole: the smollm2 baseline's answer on needle_numbers amounts
    ("amount", "The outstanding balance for the Quito account is EUR 77,980.08."),
]


@pytest.mark.parametrize("kind, answer", SANE)
def test_sane_answers_of_every_field_type_are_not_degenerate(kind: str, answer: str) -> None:
    assert degenerate(answer, _item(kind), answer) is None
    assert degenerate(answer, _item(kind), "CHF 1,451.53") is None
    assert degenerate(answer, _item(kind)) is None


@pytest.mark.parametrize("answer, cls", [
    ("", "empty"), ("   \n ", "empty"), (None, "empty"),
    ("????////", "repeat"), ("!!!!!!", "repeat"), ("?? ?? ??", "repeat"), ("the the the the", "repeat"),
    ("aaaaaaaa", "repeat"),
    ("2023-2024, 2023-2024, 2023-2024, 2023-2024, 2023-2024", "loop"),
    ("total total total total due", "loop"),
    ("I'm sorry, but I can't help with that.", "refusal"),
    ("The document does not mention the total amount.", "refusal"),
    ("Общая сумма к оплате указана в счёте", "script"),
    ("合計金額は請求書に記載されています", "script"),
])
def test_each_class(answer: str | None, cls: str) -> None:
    assert degenerate(answer, _item(), "CHF 1,451.53") == cls


def test_echo_is_a_long_verbatim_span_of_the_document_or_question() -> None:
    echoed = ("The services described below were delivered in full during the month of March and are billed in "
              "Swiss francs according to the framework agreement")
    assert degenerate(echoed, _item(), "CHF 1,451.53") == "echo"
    long_q = ("Read the invoice above carefully and state the total amount due including VAT exactly as the "
              "invoice writes it, with its currency")
    assert degenerate(long_q, _item(question=long_q), "CHF 1,451.53") == "echo"
    # a short quote of the document's line is an answer, not an echo
    assert degenerate("Total amount due: CHF 1,451.53.", _item(), "CHF 1,451.53") is None


def test_refusal_and_script_count_only_where_the_baseline_answered_in_its_own() -> None:
    no = "The document does not mention the total amount."
    assert degenerate(no, _item(gold=None), no) is None  # the baseline said so too (a decoy)
    assert degenerate("Общая сумма к оплате", _item(), "Общая сумма: 1451.53") is None
    assert degenerate("Общая сумма к оплате", _item(), "1451.53") is None  # a baseline with no letters: no script


def _tally(pairs: list[tuple[str, str]], item: Item | None = None) -> Tally:
    tally = Tally()
    for base, cand in pairs:
        tally.add(item or _item(), base, cand)
    return tally


def test_hard_classes_fail_from_k_answers_where_the_baseline_answered() -> None:
    assert not _tally([("CHF 1,451.53", "????")] * (HARD_K - 1)).decide(0.95)[0]
    failed, measured, threshold, why = _tally([("CHF 1,451.53", "????")] * HARD_K).decide(0.95)
    assert failed and measured == HARD_K and threshold == HARD_K - 1 and "empty/repeat/echo" in why
    # where the baseline was degenerate itself, the candidate's answer is no evidence
    assert not _tally([("", "????")] * 10).decide(0.95)[0]
    detail = _tally([("CHF 1,451.53", "????")] * 5).detail("why")
    assert "candidate repeat 5" in detail and "baseline none" in detail and "'????'" in detail
    assert detail.count("doc_fields/inv-1-amount") == 3  # up to three examples


def test_soft_classes_are_decided_against_the_baseline_rate() -> None:
    loop = "2023-2024, 2023-2024, 2023-2024, 2023-2024, 2023-2024"
    # five loops where the baseline looped on none of five: Fisher p = 1/252
    failed, measured, _, why = _tally([("CHF 1,451.53", loop)] * 5).decide(0.95)
    assert failed and measured == 5 and why.startswith("loop answers above the baseline's rate")
    # the baseline looped as often: no collapse
    assert not _tally([(loop, loop)] * 20).decide(0.95)[0]
    # three loops among 40 sane answers are no significant rise over none (p ~ 0.12)
    assert not _tally([("CHF 1,451.53", loop)] * 3 + [("CHF 1,451.53", "CHF 1,451.53")] * 37).decide(0.95)[0]


@pytest.mark.parametrize("answers", [[a for _, a in SANE], ["", "????", "I'm sorry, I cannot help with that."] * 4])
def test_an_a_a_pair_never_collapses(answers: list[str]) -> None:
    assert not _tally([(a, a) for a in answers]).decide(0.95)[0]


def test_speed_only_items_are_no_answers() -> None:
    tally = _tally([("tok0 tok1", "????")] * 5, _item(fields=False))
    assert tally.seen == 0 and not tally.decide(0.95)[0]


def test_the_rule_is_listed_only_for_a_candidate_with_a_degenerate_answer() -> None:
    from evalrun.contract.types import Generation
    from evalrun.evals.gate import GateConfig, collapse_rule
    from evalrun.evals.scoring import score_item

    item = _item()

    def scored(out: str) -> list:  # type: ignore[type-arg]
        return [score_item(item, Generation(item_id=item.id, pack=item.pack, prompt_hash="h", output=out))]

    assert collapse_rule(GateConfig(), "c", [item], scored("CHF 1,451.53"), scored("CHF 1,451.53")) == []
    [rule] = collapse_rule(GateConfig(), "c", [item], scored("CHF 1,451.53"), scored("????"))
    assert (rule.pack, rule.rule, rule.status, rule.measured, rule.threshold) == ("*", "collapse", "pass", 1.0, 2.0)


def test_constant_is_one_answer_to_items_whose_baseline_answers_differ() -> None:
    bases = ["CHF 1,451.53", "2022-04-16", "INV-2022-0416", "Meridian Foods Ltd"]
    failed, measured, threshold, why = _tally([(b, "The answer is: 1.") for b in bases[:3]]).decide(0.95)
    assert failed and (measured, threshold) == (3, HARD_K - 1) and why.startswith("one same answer")
    detail = _tally([(b, "The answer is: 1.") for b in bases[:3]]).detail(why)
    assert "candidate constant 3" in detail and detail.count("'The answer is: 1.'") == 3
    assert not _tally([(b, "The answer is: 1.") for b in bases[:2]]).decide(0.95)[0]  # two items: not yet
    # the baseline answered alike on those items (or gave that very answer): no evidence, so no count
    assert not _tally([("CHF 1,451.53", "The answer is: 1.")] * 5).decide(0.95)[0]
    assert not _tally([("The answer is: 1.", "The answer is: 1.")] * 5
                      + [(b, "The answer is: 1.") for b in bases[:2]]).decide(0.95)[0]
    # items where the baseline answered alike count once: two distinct baseline answers are not yet three
    alike = [("N/A", "The answer is: 1.")] * 4 + [(bases[0], "The answer is: 1.")]
    assert not _tally(alike).decide(0.95)[0] and _tally(alike).const[0] == 2
    # already classed answers are not counted again
    assert "constant" not in _tally([(b, "????") for b in bases]).cand
    # the value stated on the first line is the answer, whatever explanation follows (the demo model under an
    # 8-token eviction budget); a lead-in without a value is not, so the values below it keep answers apart
    explained = [(b, f"The answer is: 1.\n\nThe reason is {b} was read.") for b in bases[:3]]
    assert _tally(explained).decide(0.95)[:2] == (True, 3)
    assert not _tally([(b, f"Here is the answer:\n{b}!") for b in bases]).decide(0.95)[0]


def test_constant_never_fires_on_a_a_nor_on_varied_wrong_answers() -> None:
    bases = [f"The total amount due is CHF {n},451.53." for n in range(1, 30)]
    assert not _tally([(b, b) for b in bases]).decide(0.95)[0]
    wrong = _tally([(b, f"The total amount due is EUR {n * 7}.00.") for n, b in enumerate(bases)])
    assert not wrong.decide(0.95)[0] and "constant" not in wrong.cand
    # a few wrong answers shared by two items each are no collapse either
    pairs = _tally([(b, f"CHF {n // 2}") for n, b in enumerate(bases)])
    assert not pairs.decide(0.95)[0] and pairs.cand["constant"] == 2
