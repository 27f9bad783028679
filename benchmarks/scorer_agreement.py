"""How often the field scorer agrees with a careful human reviewer.

    python benchmarks/scorer_agreement.py RUN_DIR --labels benchmarks/review/labels.jsonl
    python benchmarks/scorer_agreement.py RUN_DIR --blind    # answers and golds to label, no scores

A reviewer labels every (item, field) of a stored run by reading the answer
against the gold, without seeing the tool's outcome (`--blind` prints what to
label): `correct` (the answer gives the gold value and nothing contradicting
it), `wrong` (another value, or several values where one was asked), `missing`
(no value: a refusal, "not stated", babble) or `hallucinated` (a value for a
field the document does not have). The tool's outcome is mapped onto the same
four labels (correct and correct_absent -> correct; wrong_value, near_match and
partial -> wrong) and compared. A false "correct" credits an answer the
reviewer would not; a false "wrong" denies credit the reviewer would give
(and, at a baseline, hides a real loss in a candidate).

Exits 1 when agreement is below --min-agreement or any false "correct" is
found, so the figure can gate a scorer change.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.evals.api import rescore  # noqa: E402

LABELS = ("correct", "wrong", "missing", "hallucinated")
TOOL_LABEL = {"correct": "correct", "correct_absent": "correct", "wrong_value": "wrong", "near_match": "wrong",
              "partial": "wrong", "missing": "missing", "hallucinated": "hallucinated", "error": "missing"}


def _read_labels(path: Path) -> dict[tuple[str, str], dict]:
    labels: dict[tuple[str, str], dict] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("label") not in LABELS:
            raise SystemExit(f"{path}: line {number}: label must be one of {', '.join(LABELS)}")
        labels[(row["item_id"], row["field"])] = row
    return labels


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir")
    ap.add_argument("--labels", type=Path)
    ap.add_argument("--blind", action="store_true", help="print answers and golds to label, without the tool's scores")
    ap.add_argument("--min-agreement", type=float, default=0.98)
    ap.add_argument("--new-against", metavar="RUN_DIR",
                    help="count only answers that differ from this run's (a candidate's new answers)")
    args = ap.parse_args()
    scored = rescore(args.run_dir, log=lambda m: print(m, file=sys.stderr)).scored
    if args.blind:
        for s in scored:
            for name in s.fields:
                print(json.dumps({"item_id": s.item_id, "field": name, "kind": s.kinds[name], "gold": s.golds[name],
                                  "output": s.output}, ensure_ascii=False))
        return 0
    if args.labels is None:
        ap.error("--labels is required unless --blind")
    labels = _read_labels(args.labels)
    same: set[str] = set()
    if args.new_against:
        before = {s.item_id: s.output for s in rescore(args.new_against, log=lambda m: None).scored}
        same = {s.item_id for s in scored if s.item_id in before and before[s.item_id] == s.output}
        print(f"answers identical to {args.new_against}: {len(same)} items left out")
    seen: set[tuple[str, str]] = set()
    pairs: Counter[tuple[str, str]] = Counter()
    disagreements = []
    for s in scored:
        for name, score in s.fields.items():
            key = (s.item_id, name)
            if key not in labels:
                raise SystemExit(f"{args.labels}: no label for item {s.item_id!r} field {name!r}")
            seen.add(key)
            if "output" in labels[key] and labels[key]["output"] != s.output:
                raise SystemExit(f"{args.labels}: the label for item {s.item_id!r} field {name!r} is for another answer "
                                 "than this run's: label the run's own answers (--blind)")
            if s.item_id in same:
                continue
            human, tool = labels[key]["label"], TOOL_LABEL[score.outcome]
            pairs[(human, tool)] += 1
            if human != tool:
                disagreements.append((s.item_id, name, human, score, s.output))
    extra = sorted(set(labels) - seen)
    if extra:
        raise SystemExit(f"{args.labels}: labels for fields the run does not have, e.g. {extra[0]}")
    total = sum(pairs.values())
    agree = sum(n for (h, t), n in pairs.items() if h == t)
    false_correct = sum(n for (h, t), n in pairs.items() if t == "correct" and h != "correct")
    false_wrong = sum(n for (h, t), n in pairs.items() if h == "correct" and t != "correct")
    other = total - agree - false_correct - false_wrong
    print(f"fields labelled: {total}")
    print(f"agreement: {agree}/{total} = {100 * agree / total:.1f}%")
    print(f"false correct (tool credits, reviewer does not): {false_correct}")
    print(f"false wrong (reviewer credits, tool does not): {false_wrong}")
    print(f"other disagreements (wrong vs missing vs hallucinated): {other}")
    print("reviewer label -> tool label: " + ", ".join(f"{h}->{t} {n}" for (h, t), n in sorted(pairs.items())))
    for item_id, name, human, score, output in disagreements:
        shown = (output or "").replace("\n", " / ")[:160]
        print(f"  {item_id} {name}: reviewer {human}, tool {score.outcome}/{score.subcode} ({score.detail}): {shown!r}")
    return 0 if agree / total >= args.min_agreement and false_correct == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
