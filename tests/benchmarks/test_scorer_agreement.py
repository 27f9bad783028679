"""benchmarks/scorer_agreement.py's whole-set mode: distinct answers counted once, one label per
answer, scoring from the labels alone (no run store, no model), intended field types."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import scorer_agreement as sa
from evalrun.contract.types import Field, Item

ROOT = Path(__file__).resolve().parents[2]
AUDIT = ROOT / "benchmarks" / "audit"
DOC = "Rechnung R-77\nGesamtbetrag: 1.250,00 EUR\nUSt 19 %\n"


def _set(tmp_path: Path, labels: dict[str, list[tuple[str, str, str]]]) -> Path:
    """A two-config set over one document: `labels` maps config name to (field, output, label)."""
    (tmp_path / "doc.csv").write_text('text,total,rate,po\n"' + DOC + '",EUR 1250.00,19,\n', encoding="utf-8")
    task = {"pack": "files", "name": "mini", "path": "doc.csv", "document": "{text}", "mode": "per_field",
            "fields": {"total": {"type": "amount", "question": "What is the total?"},
                       "rate": {"type": "number", "question": "What VAT rate in percent?"},
                       "po": {"type": "id", "question": "What is the PO number?", "nullable": True}}}
    base = {"extends": str(ROOT / "configs" / "baseline.yaml"), "name": "mini", "tasks": [task]}
    (tmp_path / "mini.yaml").write_text(json.dumps(base), encoding="utf-8")
    (tmp_path / "mini-cand.yaml").write_text(json.dumps({"extends": "mini.yaml", "name": "mini-cand"}),
                                             encoding="utf-8")
    docs = {"configs": ["mini.yaml", "mini-cand.yaml"],
            "documents": [{"id": "mini", "fields": {"total": {"type": "amount", "q": "t", "gold": "EUR 1250.00"},
                                                    "rate": {"type": "number", "intended": "percent", "q": "r",
                                                             "gold": "19"},
                                                    "po": {"type": "id", "q": "p", "gold": None}}}]}
    (tmp_path / "documents.yaml").write_text(json.dumps(docs), encoding="utf-8")
    for name, rows in labels.items():
        lines = [json.dumps({"item_id": f"mini/0/{f}", "field": f, "output": o, "label": lab, "note": ""})
                 for f, o, lab in rows]
        (tmp_path / f"labels-{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


BASE = [("total", "The total is 1.250,00 EUR.", "correct"), ("rate", "19", "correct"),
        ("po", "The document does not give a PO number.", "correct")]


def test_a_set_is_scored_from_its_labels_alone_each_distinct_answer_once(tmp_path, capsys) -> None:
    cand = [BASE[0], ("rate", "The rate is 91 %.", "wrong"), ("po", "PO-4471", "hallucinated")]
    rc = sa.main(["--set", str(_set(tmp_path, {"mini": BASE, "mini-cand": cand})), "--from-labels"])
    out = capsys.readouterr().out
    assert "answers labelled: 5 distinct (of 6 answers in 2 configs)" in out  # the shared total once
    assert "agreement on the outcome class: 5/5 = 100.0%" in out
    assert "false correct (tool credits, reviewer does not): 0/5" in out
    assert "mini-cand           3 answers  reviewer  33.3% (-66.7)" in out
    assert rc == 0


def test_one_answer_with_two_labels_is_refused(tmp_path, capsys) -> None:
    cand = [("total", BASE[0][1], "wrong"), BASE[1], BASE[2]]
    rc = sa.main(["--set", str(_set(tmp_path, {"mini": BASE, "mini-cand": cand})), "--from-labels"])
    assert rc == 2
    assert "label one answer of 'mini/0/total' differently (correct vs wrong)" in capsys.readouterr().err


def test_a_label_for_another_answer_or_a_missing_label_is_refused(tmp_path, capsys) -> None:
    rc = sa.main(["--set", str(_set(tmp_path, {"mini": BASE, "mini-cand": BASE[:2]})), "--from-labels"])
    assert rc == 2
    assert "labels-mini-cand.jsonl: no label for item 'mini/0/po' field 'po'" in capsys.readouterr().err


def test_a_false_correct_fails_the_set(tmp_path, capsys) -> None:
    # the reviewer denies credit to an answer the tool credits: a false "correct" exits 1
    rows = [("total", "The total is 1.250,00 EUR.", "wrong"), BASE[1], BASE[2]]
    rc = sa.main(["--set", str(_set(tmp_path, {"mini": rows, "mini-cand": rows})), "--from-labels"])
    out = capsys.readouterr().out
    assert "false correct (tool credits, reviewer does not): 1/3" in out and rc == 1
    assert "confusion (reviewer rows x tool columns)" in out


def test_the_intended_type_is_used_only_when_the_scorer_knows_it() -> None:
    item = Item(id="mini/0/rate", pack="mini", prompt="p",
                fields=[Field(name="rate", kind="number", gold="19", options={"field": "rate"})])
    intended = {("mini", "rate"): ("percent", {"unit": "%"})}
    same, note = sa._retype(item, intended, {"number", "amount"})
    assert same.fields[0].kind == "number"
    assert note == "intended percent, scored as number (the scorer has no percent type)"
    typed, note = sa._retype(item, intended, {"number", "percent"})
    assert typed.fields[0].kind == "percent" and typed.fields[0].options == {"field": "rate", "unit": "%"}
    assert note == "scored as intended type percent"


@pytest.mark.slow
def test_the_audit_set_has_every_answer_labelled_once() -> None:
    answers = sa.set_answers(AUDIT, None)
    unique = sa.distinct(answers)
    configs = {a.config for a in answers}
    assert configs == {"audit", "audit-sparse50", "audit-snapkv", "audit-int4kv"}  # baseline and three lossy
    assert len(answers) == 4 * 110 and len(unique) > 247  # bigger than the audit before it
    assert all(a.label in sa.LABELS for a in unique)
    absent = [a for a in unique if a.gold is None]
    assert absent and all(a.label != "wrong" for a in absent)  # an absent field has no wrong value
    assert all(a.label != "hallucinated" for a in unique if a.gold is not None)
