"""The scorer against a careful reviewer, on real answers of the default model.

benchmarks/review/ holds 14 business documents with five typed questions each
and, per answer the model gave (at baseline, under three KV accelerations and with int8 weights),
the label a reviewer gave it blind. Scoring those stored answers again must
never credit one the reviewer does not, and must keep agreeing at least as
well as when the labels were made; a scorer change that loses agreement fails
here with the answers it now reads differently."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.scorer_agreement import TOOL_LABEL
from evalrun.contract.types import Generation
from evalrun.evals.api import load
from evalrun.evals.scoring import score_item
from evalrun.tasks import get_pack

REVIEW = Path(__file__).resolve().parents[2] / "benchmarks" / "review"
LABELS = ["labels.jsonl", "labels-int4kv.jsonl", "labels-snapkv.jsonl", "labels-int3sim.jsonl", "labels-w8.jsonl"]


def _answers() -> list[dict]:
    """Each distinct (item, field, answer) once: a candidate that gave the baseline's
    answer adds nothing to the measure."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for name in LABELS:
        for line in (REVIEW / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            key = (row["item_id"], row["field"], row["output"])
            if key not in seen:
                seen.add(key)
                out.append(row)
    return out


def test_the_scorer_agrees_with_the_reviewer() -> None:
    task = load(REVIEW / "review.yaml").tasks[0]
    items = {it.id: it for it in get_pack(task.pack).items(task.params, len)}  # prompts need no tokenizer
    rows = _answers()
    assert len(rows) == 229 and all(r["item_id"] in items for r in rows)
    agree, false_correct, false_wrong = 0, [], []
    for r in rows:
        item = items[r["item_id"]]
        gen = Generation(item_id=item.id, pack=item.pack, prompt_hash="stored", output=r["output"])
        tool = TOOL_LABEL[score_item(item, gen).fields[r["field"]].outcome]
        agree += tool == r["label"]
        if tool == "correct" and r["label"] != "correct":
            false_correct.append((r["item_id"], r["output"]))
        if r["label"] == "correct" and tool != "correct":
            false_wrong.append((r["item_id"], r["output"]))
    assert false_correct == [], "the scorer credits answers a reviewer would not"
    assert false_wrong == [], "the scorer denies credit a reviewer gives"
    assert agree >= 229, f"agreement fell to {agree}/{len(rows)}"
