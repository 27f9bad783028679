"""The answer classes a careful reviewer reads differently from a naive scorer, each
with an answer that earns the rule and one that must not: a list whose first item
names the asked value, a stray sentence about the document beside a value, a value
restated or followed by "not found", copied document lines, a second number the
answer attributes to something else, babble and echoed questions, and the absent
rule (a decoy is correctly absent only when the answer says the value is not
given). The answers are written in the style of the default model's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalrun.contract.types import CONTEXT_SEPARATOR, Field, Item
from evalrun.evals.scoring import COPIED, score_field, score_item
from evalrun.evals.scoring._scoring import _options
from tests.fakes.runs import answered, generation, run_result


def prompt(document: str, question: str) -> str:
    return document + CONTEXT_SEPARATOR + question


LEASE = ("ASSURED SHORTHOLD TENANCY AGREEMENT\nReference: AST/2025/0117\nProperty: Flat 2, 14 Cotham Hill, Bristol\n"
         "Term: 12 months from 1 April 2025\nRent: £1,250.00 per calendar month\nDeposit: £1,442.31\n"
         "The deposit is protected with the DPS within 30 days of receipt.")
INVOICE = ("Hargreaves Print Ltd\nInvoice no. HP-5531\nInvoice date: 3 February 2025\nNet: £7,719.54\n"
           "VAT 20%: £1,543.91\nInvoice total: £9,263.45\nPayable within 30 days by BACS to sort code 40-11-62.")


def S(kind: str, gold: Any, pred: str, question: str, document: str = INVOICE, **opts: Any):
    return score_field(kind, gold, pred, context=prompt(document, question), **opts)


# 1. a numbered answer whose first item states the asked value, naming it as the question does
@pytest.mark.parametrize("answer, outcome", [
    ("1. The tenancy deposit is £1,442.31.\n2. The rent is £1,250.00 per calendar month.\n3. The term is 12 months.",
     "correct"),
    ("- Deposit: £1,442.31\n- Rent: £1,250.00\n- Protected within 30 days", "correct"),
    # the named item gives another value: read it, and it is wrong
    ("1. The deposit is £1,250.00.\n2. The term is 12 months.", "wrong_value"),
    # two items name the deposit with different values: several values, not credited
    ("1. The deposit is £1,442.31.\n2. The deposit is £1,250.00 after deductions.", "wrong_value"),
])
def test_list_first_item_names_the_asked_value(answer: str, outcome: str) -> None:
    fs = S("amount", "GBP 1442.31", answer, "What is the deposit? Answer with the amount and currency.", LEASE,
           field="amount")
    assert fs.outcome == outcome, fs


def test_question_words_name_the_field_even_when_its_key_is_generic() -> None:
    answer = "The closing balance is 4,118.20.\n\nThe amount is 950.00.\n\nThe total is 4,1"
    q = "What is the closing balance? Answer with the amount and currency."
    assert S("amount", "GBP 4118.20", answer, q, field="amount").outcome == "correct"
    # without the question, the field key names the other sentence
    assert score_field("amount", "GBP 4118.20", answer, field="amount").outcome == "wrong_value"
    # a clause in the question's words with a second value: two values stated, none credited
    rival = "The quoted total including tax is ¥ 2,418,000.\n\nThe total including tax is ¥ 2,481,000."
    fs = S("amount", "JPY 2418000", rival, "What is the quoted total including tax?", field="amount")
    assert fs.outcome == "wrong_value", fs


# 2. a stray sentence about the document beside a value; a denial naming the field stays self-contradicting
@pytest.mark.parametrize("answer, outcome, sub", [
    ("The invoice total is £9,263.45. The document is not found.", "correct", None),
    ("£9,263.45.\n\nThe file is not available.", "correct", None),
    ("The invoice total is £9,263.45. The invoice total is not stated.", "wrong_value", "self_contradicting"),
    ("£9,263.45. The document does not mention the total.", "wrong_value", "self_contradicting"),
    ("The document is not found.", "missing", None),
])
def test_a_stray_refusal_about_the_document(answer: str, outcome: str, sub: str | None) -> None:
    fs = S("amount", "GBP 9263.45", answer, "What is the invoice total? Answer with the amount and currency.",
           field="total")
    assert (fs.outcome, fs.subcode) == (outcome, sub), fs


# 3. one value restated in the same sentence is one value
@pytest.mark.parametrize("kind, gold, answer", [
    ("number", "12", "12 months, not 12 months."),
    ("number", "12", "The fixed term is 12 months, i.e. 12 months."),
    ("date", "2025-04-01", "1 April 2025, not 1 April 2025."),
])
def test_a_value_restated_is_one_value(kind: str, gold: str, answer: str) -> None:
    assert S(kind, gold, answer, "How long is the fixed term?", LEASE).outcome == "correct"


# 4. a value and "not found" in one clause: a value and a denial of it, never credited
@pytest.mark.parametrize("answer", [
    "£9,263.45 not found", "£9,263.45 (not found)", "The total £9,263.45 is not stated in the document.",
])
def test_a_value_followed_by_not_found(answer: str) -> None:
    q = "What is the invoice total? Answer with the amount and currency."
    fs = S("amount", "GBP 9263.45", answer, q, field="total")
    assert (fs.outcome, fs.subcode) == ("wrong_value", "self_contradicting"), fs
    assert S("amount", None, answer, q, field="total").outcome == "hallucinated"


# 5. copied document text with one number: read only when the number is offered for the field
@pytest.mark.parametrize("kind, gold, answer, question, outcome", [
    ("number", "20", "Payable within 30 days by BACS to sort code 40-11-62.\n\nThe",
     "What VAT rate in percent is charged?", "missing"),
    ("number", "20", "Payable within 30 days by BACS to sort code 40-11-62.", "What VAT rate in percent is charged?",
     "missing"),
    # a copied "label value" line: the model picked that line
    ("amount", "GBP 9263.45", "Net: £7,719.54", "What is the invoice total?", "wrong_value"),
    # its own frame around the question's words: an answer
    ("amount", "GBP 9263.45", "The invoice total is £9,263.45.", "What is the invoice total?", "correct"),
])
def test_copied_text_with_one_number(kind: str, gold: str, answer: str, question: str, outcome: str) -> None:
    fs = S(kind, gold, answer, question)
    assert fs.outcome == outcome, fs
    assert (fs.detail == COPIED) == (outcome == "missing")


# 6. a second number the answer attributes to something else
@pytest.mark.parametrize("answer, outcome", [
    ("£9,263.45 (the net amount is £7,719.54)", "correct"),
    ("The invoice total is £9,263.45.\n\nThe sort code is 40-11-62 and the VAT is £1,543.91.", "correct"),
    ("£9,263.45 or £7,719.54", "wrong_value"),  # two values for the field
    ("The net is £7,719.54 (the VAT is £1,543.91)", "wrong_value"),  # both attributed elsewhere: none read
])
def test_a_value_beside_one_attributed_elsewhere(answer: str, outcome: str) -> None:
    fs = S("amount", "GBP 9263.45", answer, "What is the invoice total? Answer with the amount and currency.",
           field="amount")
    assert fs.outcome == outcome, fs


def test_an_unrelated_number_is_not_the_asked_one() -> None:
    q = "What is the quoted total including tax?"
    answer = "The quoted total including tax is ¥ 1,335,900.\n\nThe currency is ¥ 1,353,900.\n\nThe total including tax is ¥ 1"
    assert S("amount", "JPY 1335900", answer, q, field="amount").outcome == "wrong_value"


# 7. babble with no value of the field's type is missing; the question's own words and numbers are no value
_CUR = {"allowed": ["GBP", "EUR", "USD"], "synonyms": {"pounds": "GBP", "pounds sterling": "GBP"}, "field": "currency"}
_CUR_Q = "In which currency are the amounts in this document? Answer with the currency only."


@pytest.mark.parametrize("answer, outcome, sub", [
    ("The document contains HP-5531 (HP-5531) in 30 days (HP-5531)", "missing", None),
    ("Hargreaves Print Ltd\n\nThe document is in English, so I will summarise", "missing", None),
    ("The document is in the currency of", "missing", None),
    ("The amounts in this document are in the currency of the country of Japan.", "wrong_value", "invalid_value"),
    ("The document is in English, so the answer is \"English\".", "wrong_value", "invalid_value"),
    ("Rupees", "wrong_value", "invalid_value"),
    ("The amounts are in pounds sterling.", "correct", None),
])
def test_enum_babble_is_missing(answer: str, outcome: str, sub: str | None) -> None:
    fs = S("enum", "GBP", answer, _CUR_Q, **_CUR)
    assert (fs.outcome, fs.subcode) == (outcome, sub), fs


def test_echoed_question_is_no_value() -> None:
    q = "What is the MRN of this declaration? Answer with the MRN only."
    assert S("id", "25DE853400091107A3", "The MRN of this declaration is", q, field="reference").outcome == "missing"
    q = "How many overtime hours were paid in week 12?"
    assert S("number", "6.5", "In week 12, 6.5 overtime hours were paid.", q).outcome == "correct"
    assert score_field("number", "6.5", "In week 12, 6.5 overtime hours were paid.").outcome == "wrong_value"
    # a code before its number is part of the id, even when the question says it
    q = "What is the PO number?"
    assert S("id", "PO-77412", "The PO number is PO-77412.", q, field="po_number").outcome == "correct"
    assert S("id", "HP-5531", "HP 5531", "What is the HP invoice number?", field="invoice").outcome == "correct"


# 8. the absent rule
_DISCOUNT = {"field": "discount"}
_DQ = "What early-payment discount is offered? Answer with the amount and currency."


@pytest.mark.parametrize("answer", [
    "Not stated.", "N/A", "The document does not mention a discount.", "There is no discount in the document.",
    "Nicht angegeben.", "Ein Skonto ist im Dokument nicht angegeben.", "Non indiqué.",
    "La remise n'est pas indiquée dans le document.", "No se indica.", "No se especifica ningún descuento.",
    "記載なし", "割引は記載されていません。", "Não informado.", "Niet vermeld.",
])
def test_a_decoy_is_correctly_absent_only_when_the_answer_says_so(answer: str) -> None:
    assert S("amount", None, answer, _DQ, **_DISCOUNT).outcome == "correct_absent", answer


@pytest.mark.parametrize("kind, answer, outcome", [
    ("amount", "You are a helpful assistant. Answer the question from the document.", "missing"),
    ("amount", "What early-payment discount is offered?", "missing"),
    ("amount", "The document is written in English and lists several services.", "missing"),
    ("amount", "", "missing"),
    ("date", "最位最佳最佳最佳最佳最佳最佳最佳", "missing"),
    ("enum", "The document is written in English, so I will summarise it.", "missing"),
    ("amount", "Payable within 30 days by BACS to sort code 40-11-62.\n\nThe", "missing"),  # copied, offers nothing
    # a value of any shape is hallucinated
    ("id", "£9,263.45", "hallucinated"),  # an amount offered as a PO number
    ("number", "The discount rate is 3 February 2025.", "hallucinated"),  # a date offered as a percentage
    ("amount", "The discount is 2% if paid within 10 days.", "hallucinated"),
    ("enum", "Pending", "hallucinated"),
    ("date", "Payment terms: 30 days net", "hallucinated"),  # an invented payment term
])
def test_anything_else_on_a_decoy_is_missing_or_hallucinated(kind: str, answer: str, outcome: str) -> None:
    opts = {**_DISCOUNT, **({"allowed": ["paid", "unpaid"]} if kind == "enum" else {})}
    assert S(kind, None, answer, _DQ, **opts).outcome == outcome, answer


# 9. the public function and the pipeline read every answer the same
REVIEW = Path(__file__).resolve().parents[2] / "benchmarks" / "review"


def test_score_field_and_the_pipeline_agree_on_every_labelled_answer() -> None:
    from evalrun.evals.api import load
    from evalrun.tasks import get_pack

    task = load(REVIEW / "review.yaml").tasks[0]
    items = {it.id: it for it in get_pack(task.pack).items(task.params, len)}
    n = 0
    for name in sorted(REVIEW.glob("labels*.jsonl")):
        for line in name.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            item = items[row["item_id"]]
            f = next(f for f in item.fields if f.name == row["field"])
            pipeline = score_item(item, answered(item, row["output"], prompt_hash="h")).fields[f.name]
            public = score_field(f.kind, f.gold, row["output"], context=item.prompt, **_options(f))
            assert public == pipeline, (row["item_id"], row["output"])
            n += 1
    assert n == 350


def test_the_pipeline_passes_the_prompt() -> None:
    item = Item(id="d/1", pack="d", prompt=prompt(INVOICE, "What VAT rate in percent is charged?"), context=INVOICE,
                question="What VAT rate in percent is charged?", answer_format="text",
                fields=[Field(name="number", kind="number", gold="20")])
    out = "Payable within 30 days by BACS to sort code 40-11-62."
    scored = score_item(item, generation("d/1", out))
    assert scored.fields["number"].outcome == "missing"
    assert score_field("number", "20", out, context=item.prompt, field="number") == scored.fields["number"]


def test_babble_on_decoys_is_a_harmful_flip_the_gate_fails() -> None:
    """A candidate whose answers on absent fields degrade into babble lost what the
    baseline had (it said "not stated"): harmful flips, and `max_drop` fails."""
    from evalrun.evals import api
    from evalrun.evals.gate import GateConfig, PackRule
    from evalrun.evals.results import RunResult

    items = []
    for i in range(20):
        doc = f"Invoice INV-{1000 + i}\nTotal: EUR {100 + i}.00\nPayable within 30 days."
        for name, kind, gold in (("total", "amount", f"EUR {100 + i}.00"), ("discount", "amount", None)):
            q = f"What is the {name}? Answer with the amount and currency."
            items.append(Item(id=f"inv/{i}/{name}", pack="inv", prompt=prompt(doc, q), context=doc, question=q,
                              answer_format="text", fields=[Field(name=name, kind=kind, gold=gold)]))

    def run(name: str, decoy_answer: str) -> RunResult:
        gens = {}
        for it in items:
            gold = it.fields[0].gold
            out = f"The total is {gold}." if gold else decoy_answer
            gens[it.id] = answered(it, out,
                                     new_tokens=5, seconds=0.1, batch_size=1, prompt_tokens=50)
        return run_result(name, items, gens, config={})

    base = run("baseline", "The document does not mention a discount.")
    babble = run("babble", "The document is an invoice for services in the English language.")
    gate = GateConfig(packs={"*": PackRule(max_drop=5.0)}, max_harmful_flips={})
    report = api.compare_results(base, [(babble, gate)])
    [verdict] = report.verdicts
    assert report.exit_code == 1 and verdict.status == "fail"
    rule = next(r for r in verdict.rules if r.rule == "max_drop")
    assert rule.measured == pytest.approx(50.0) and not rule.passed
    [cmp] = report.comparisons
    assert len(cmp.harmful) == 20 and len(cmp.helpful) == 0
    assert {(f.baseline_outcome, f.candidate_outcome) for f in cmp.harmful} == {("correct_absent", "missing")}
    # the same candidate saying "not given" in German passes
    german = run("german", "Ein Skonto ist nicht angegeben.")
    assert api.compare_results(base, [(german, gate)]).exit_code == 0


@pytest.mark.parametrize("answer", ["Nicht angegeben.", "Non indiqué.", "No consta.", "記載なし", "Niet vermeld."])
def test_a_refusal_in_another_language_is_a_refusal_with_a_gold_too(answer: str) -> None:
    assert S("amount", "GBP 9263.45", answer, "What is the invoice total?", field="total").outcome == "missing"


# 7 (ids). codes deep in a description, or behind another label, are not the asked id
_REF_Q = "What is the agreement's reference? Answer with the reference only."


@pytest.mark.parametrize("answer, outcome", [
    ("The agreement is a tenancy between the Landlord and the Tenant of Flat 2, 14 Cotham Hill, Bristol BS6 6JA.",
     "missing"),
    ("The agreement is a contract between the parties, namely an Assured Shorthold Tenancy (AST).", "missing"),
    ("Landlord: Mr K. Osei, licence LL-2231\nProperty: Flat 2, 14 Cotham Hill", "missing"),
    ("The agreement's reference is AST/2025/0117.", "correct"),
    ("The reference is AST/2025/0171.", "wrong_value"),
    ("The agreement's reference is 12.", "wrong_value"),  # a number in the id's place: a (wrong) value
    ("The agreement's reference is \"This Tenancy\"", "wrong_value"),
    ("AST/2025/0117", "correct"),
])
def test_codes_that_belong_to_other_things_are_not_the_id(answer: str, outcome: str) -> None:
    fs = S("id", "AST/2025/0117", answer, _REF_Q, LEASE, field="reference")
    assert fs.outcome == outcome, fs
    decoy = S("id", None, answer, _REF_Q, LEASE, field="reference").outcome
    assert decoy == ("missing" if outcome == "missing" else "hallucinated"), answer


def test_a_cut_repeat_of_a_list_item_is_no_value() -> None:
    answer = "1. 3 February 2025: 3 February 2025\n2. 3 February 2025: 3 Feb"
    assert S("amount", "GBP 9263.45", answer, "What is the invoice total?").outcome == "missing"
    # a new item that is not a repeat still counts
    assert S("amount", "GBP 9263.45", "1. 3 February 2025\n2. Total 9,263.45", "What is the invoice total?"
             ).outcome == "correct"


@pytest.mark.parametrize("answer, outcome, sub", [
    ("The balance from this assessment is $2,406.75.\n\nThe amount is negative because it is a refund.", "correct", None),
    ("The balance is $2,406.75, which is negative.", "correct", None),
    ("The balance from this assessment is $2,406.75.", "wrong_value", "sign_flip"),
    ("The balance is $2,406.75. The amount is not negative.", "wrong_value", "sign_flip"),
])
def test_a_sign_stated_in_words(answer: str, outcome: str, sub: str | None) -> None:
    q = "What is the balance from this assessment, as shown (a bracketed amount is negative)?"
    fs = S("amount", "CAD -2406.75", answer, q, "Balance from this assessment  (2,406.75)", field="amount")
    assert (fs.outcome, fs.subcode) == (outcome, sub), fs
    assert S("amount", "CAD 2406.75", answer, q, field="amount").outcome != "correct" or sub is not None


def test_an_enum_answer_naming_the_field_offers_a_value() -> None:
    opts = {"allowed": ["paid", "unpaid"], "field": "status"}
    assert score_field("enum", "paid", "The status is pending.", **opts).subcode == "invalid_value"
    assert score_field("enum", "paid", "The document lists three services and a bank account.", **opts
                       ).outcome == "missing"
    # told nothing of the field, the scorer takes every answer as one (as before it knew names)
    assert score_field("enum", "paid", "The document lists three services.", allowed=["paid", "unpaid"]
                       ).subcode == "invalid_value"


def test_a_share_of_the_field_is_not_the_field() -> None:
    """Two clauses name the total; one gives a share of it ("21.00% of the total to pay is
    2.574,00 €"): the other gives the total itself."""
    answer = "The total to pay is 8.940,00 €\n\nThe currency is 21.00% of the total to pay is 2.574,00 €\n\nThe total to"
    assert S("amount", "EUR 8940.00", answer, "What is the total to pay?").outcome == "correct"
    assert S("amount", "EUR 8950.00", answer, "What is the total to pay?").outcome == "wrong_value"
    two = "The total to pay is 8.940,00 €\n\nThe total to pay is 2.574,00 €"
    assert S("amount", "EUR 8940.00", two, "What is the total to pay?").outcome == "wrong_value"


# a currency written with a dot ("Rs.", "Fr.") ends no sentence; a clause about a share of the
# field is no rival of the value named for it, a clause giving "the amount" another value is
_LOAN_Q = "What loan amount has been sanctioned? Answer with the amount and currency."
_LOAN = "Sanction letter\nLoan amount sanctioned: Rs. 1,20,00,000 (Rupees One Crore Twenty Lakh)\nMargin: ₹30 lakh"


@pytest.mark.parametrize("answer, outcome", [
    ("The amount sanctioned is Rs. 1,20,00,000. The amount is ₹30 lakh, which is 30% of the loan amount.",
     "correct"),
    ("The loan amount sanctioned is Rs. 1,20,00,000. The margin is ₹30 lakh.", "correct"),
    ("The loan amount sanctioned is Rs. 1,20,00,000. The amount is payable in 240 EMIs of Rs. 1,05,000.",
     "correct"),
    # "the amount" restated with another value: two values for the field, none credited
    ("The loan amount sanctioned is Rs. 1,20,00,000. The amount is 120,000,000, and the currency is Rupees One "
     "Crore Twenty L", "wrong_value"),
    ("The loan amount sanctioned is Rs. 1,20,00,000. The amount is ₹1.20 lakh, and the amount is 30,00,000.",
     "wrong_value"),
    ("The amount sanctioned is Rs. 1,05,00,000. The amount is ₹30 lakh, which is 30% of the loan amount.",
     "wrong_value"),
])
def test_a_currency_with_a_dot_and_a_share_of_the_field(answer: str, outcome: str) -> None:
    fs = S("amount", "INR 12000000", answer, _LOAN_Q, _LOAN, field="loan_amount")
    assert fs.outcome == outcome, fs


def test_a_currency_with_a_dot_ends_no_sentence() -> None:
    from evalrun.values.clauses import split_clauses

    assert split_clauses("The total is Rs. 1,20,000. Paid by Fr. 200. Thanks.") == [
        "The total is Rs. 1,20,000.", "Paid by Fr. 200.", "Thanks."]
    assert split_clauses("It costs 5 kr. 20 were sold.") == ["It costs 5 kr.", "20 were sold."]
