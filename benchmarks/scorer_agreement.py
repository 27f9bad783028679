"""How often the field scorer agrees with a careful human reviewer.

    python benchmarks/scorer_agreement.py RUN_DIR --labels benchmarks/review/labels.jsonl
    python benchmarks/scorer_agreement.py RUN_DIR --blind    # answers and golds to label, no scores
    python benchmarks/scorer_agreement.py --set benchmarks/audit [--runs runs-audit]
    python benchmarks/scorer_agreement.py --set benchmarks/audit --from-labels   # no run store needed
    python benchmarks/scorer_agreement.py --set benchmarks/audit --blind         # distinct answers to label

A reviewer labels every (item, field) of a stored run by reading the answer
against the gold, without seeing the tool's outcome (`--blind` prints what to
label): `correct` (the answer gives the gold value and nothing contradicting
it; for a field whose gold is absent, the answer says the value is not given),
`wrong` (another value, or several values where one was asked), `missing`
(no value: a refusal, "not stated", babble, the question restated) or
`hallucinated` (a value, of any shape, for a field the document does not have).
The tool's outcome is mapped onto the same four labels (correct and
correct_absent -> correct; wrong_value, near_match and partial -> wrong) and
compared. A false "correct" credits an answer the reviewer would not; a false
"wrong" denies credit the reviewer would give (and, at a baseline, hides a real
loss in a candidate).

`--set DIR` takes a whole audit set: DIR/documents.yaml lists its run configs
(`configs:`) and each field's intended type; DIR/labels-<config name>.jsonl holds
the reviewer's label of every answer of that config. Each distinct (item, field,
answer) is counted once, however many configs gave it, and must carry one label.
The answers come from the stored runs under --runs, or, with --from-labels, from
the labels files alone (they carry each answer's text): the items are built again
from the configs, so the pipeline scores them exactly as a run would. A field
whose intended type (percent, quantity, checked_id) the scorer knows is scored
with that type; otherwise with the type the run used, and the output says which.

Exits 1 when agreement is below --min-agreement or any false "correct" is
found, so the figure can gate a scorer change; 2 on a labels file or set that
cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalrun.contract.types import CORRECT_OUTCOMES, FieldScore, Generation, Item  # noqa: E402
from evalrun.evals.api import load, rescore  # noqa: E402
from evalrun.evals.scoring import score_field  # noqa: E402
from evalrun.evals.scoring import score_item  # noqa: E402
from evalrun.evals.store import RunStore  # noqa: E402
from evalrun.tasks import get_pack  # noqa: E402

LABELS = ("correct", "wrong", "missing", "hallucinated")
TOOL_LABEL = {"correct": "correct", "correct_absent": "correct", "wrong_value": "wrong", "near_match": "wrong",
              "partial": "wrong", "missing": "missing", "hallucinated": "hallucinated", "error": "missing"}


class SetError(Exception):
    """A set, labels file or run that cannot be read: one line naming the file."""


def _read_labels(path: Path) -> dict[tuple[str, str], dict]:
    labels: dict[tuple[str, str], dict] = {}
    if not path.is_file():
        raise SetError(f"{path}: no such labels file")
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("label") not in LABELS:
            raise SetError(f"{path}: line {number}: label must be one of {', '.join(LABELS)}")
        labels[(row["item_id"], row["field"])] = row
    return labels


# --- the whole audit set -------------------------------------------------------------------

def known_kinds() -> set[str]:
    """The field types the scorer knows now: evals.scoring.fields.KINDS, and a values registry if there is one."""
    from evalrun.evals.scoring import fields

    kinds = set(getattr(fields, "KINDS", ()))
    try:
        from evalrun.values.registry import type_names
    except ImportError:
        return kinds
    return kinds | set(type_names())


@dataclass
class Answer:
    """One (config, item, field) answer with the reviewer's label and the tool's score."""

    config: str
    item_id: str
    field: str
    kind: str  # the type it was scored with
    gold: str | None
    output: str | None
    label: str | None
    score: FieldScore
    plain: FieldScore  # the public score_field on the same answer, given the same prompt
    note: str = ""


def _intended(doc_file: Path) -> tuple[list[Any], dict[tuple[str, str], tuple[str, dict[str, Any]]], dict]:
    """(the set's configs: a file, or {file, partial: true} for a run stopped part-way; each (pack,
    field)'s intended type and options; each field's question)."""
    try:
        data = yaml.safe_load(doc_file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SetError(f"{doc_file}: cannot be read: {exc}") from None
    if not isinstance(data, dict) or not data.get("configs"):
        raise SetError(f"{doc_file}: configs: must list the set's run configs")
    intended, questions = {}, {}
    for doc in data.get("documents", []):
        for name, f in doc["fields"].items():
            questions[(doc["id"], name)] = f.get("q")
            if f.get("intended"):
                intended[(doc["id"], name)] = (f["intended"], dict(f.get("intended_options") or {}))
    return data["configs"], intended, questions


def _retype(item: Item, intended: dict, known: set[str]) -> tuple[Item, str]:
    """The item with its field's intended type where the scorer knows it; else as run."""
    f = item.fields[0] if len(item.fields) == 1 else None
    want = intended.get((item.pack, f.name)) if f is not None else None
    if f is None or want is None:
        return item, ""
    kind, opts = want
    if kind not in known:
        return item, f"intended {kind}, scored as {f.kind} (the scorer has no {kind} type)"
    field = f.model_copy(update={"kind": kind, "options": {**f.options, **opts}})
    return item.model_copy(update={"fields": [field]}), f"scored as intended type {kind}"


def _run_dir(runs: Path, name: str) -> Path:
    found = sorted(p for p in runs.glob(f"{name}-*") if (p / "manifest.json").exists()
                   and len(p.name) == len(name) + 13)
    if len(found) != 1:
        raise SetError(f"{runs}: expected one run of {name!r} (NAME-KEY), found "
                       f"{', '.join(p.name for p in found) or 'none'}")
    return found[0]


def _items_and_answers(config_file: Path, labels: dict[tuple[str, str], dict], runs: Path | None
                       ) -> tuple[list[Item], dict[str, Generation]]:
    """The config's items and its answers: from its stored run, or from the labels' text."""
    if runs is not None:
        store = RunStore(_run_dir(runs, load(config_file).name), log=lambda m: None)
        _, items = store.read_checked()
        return items, store.read_samples()
    items = []
    for task in load(config_file).tasks:
        items += get_pack(task.pack).items(task.params, len)  # prompts need no tokenizer
    by_id = {it.id: it for it in items}
    gens: dict[str, Generation] = {}
    for (item_id, _), row in labels.items():
        if item_id not in by_id:
            raise SetError(f"labels for {config_file.name}: item {item_id!r} is not one the config builds")
        if "output" not in row:
            raise SetError(f"labels for {config_file.name}: item {item_id!r} has no output to score")
        gens[item_id] = Generation(item_id=item_id, pack=by_id[item_id].pack, prompt_hash="labels",
                                   output=row["output"])
    return items, gens


def set_answers(set_dir: Path, runs: Path | None, blind: bool = False) -> list[Answer]:
    """Every answer of every config of the set, scored by the pipeline (intended types where known)."""
    configs, intended, _ = _intended(set_dir / "documents.yaml")
    known = known_kinds()
    out = []
    for config in configs:
        partial = isinstance(config, dict) and bool(config.get("partial"))
        config_file = set_dir / (config["file"] if isinstance(config, dict) else config)
        name = load(config_file).name
        unanswered = 0
        label_file = set_dir / f"labels-{name}.jsonl"
        labels = {} if blind and not label_file.exists() else _read_labels(label_file)
        try:
            items, gens = _items_and_answers(config_file, labels, runs)
        except SetError as exc:
            if not blind:
                raise
            print(f"{name}: left out: {exc}", file=sys.stderr)  # labelling as the runs come in
            continue
        extra = sorted(set(labels) - {(it.id, f.name) for it in items for f in it.fields})
        if extra:
            raise SetError(f"{label_file}: labels for fields the run does not have, e.g. {extra[0]}")
        for it in items:
            if it.id not in gens and (blind or partial):
                unanswered += 1  # a run still going, or one stopped part-way and marked partial
                continue
            for f in it.fields:
                if (it.id, f.name) not in labels and not blind:
                    raise SetError(f"{label_file}: no label for item {it.id!r} field {f.name!r}")
            if it.id not in gens:
                raise SetError(f"{name}: item {it.id!r} has no answer")
            item, note = _retype(it, intended, known)
            gen = gens[it.id]
            scored = score_item(item, gen)
            for f in item.fields:
                row = labels.get((it.id, f.name))
                if row is not None and row.get("output", gen.output) != gen.output:
                    raise SetError(f"{label_file}: the label for item {it.id!r} field {f.name!r} is for another "
                                   "answer than the run's: label the run's own answers (--blind)")
                plain = score_field(f.kind, f.gold, gen.output, context=item.prompt, **{**f.options, "field": f.name})
                out.append(Answer(name, it.id, f.name, f.kind, f.gold, gen.output, row and row["label"],
                                  scored.fields[f.name], plain, note))
        if unanswered:
            print(f"{name}: {unanswered} of {len(items)} items have no answer (a partial run): left out",
                  file=sys.stderr if blind else sys.stdout)
    return out


def distinct(answers: Iterable[Answer]) -> list[Answer]:
    """Each (item, field, answer) once; two labels for one answer are an error."""
    seen: dict[tuple[str, str, str | None], Answer] = {}
    for a in answers:
        key = (a.item_id, a.field, a.output)
        first = seen.setdefault(key, a)
        if first.label != a.label:
            raise SetError(f"labels-{first.config}.jsonl and labels-{a.config}.jsonl label one answer of "
                           f"{a.item_id!r} differently ({first.label} vs {a.label})")
    return list(seen.values())


def _pct(n: int, total: int) -> str:
    return f"{n}/{total} = {100 * n / total:.1f}%" if total else f"{n}/0"


def _credit(answers: list[Answer]) -> tuple[float, float]:
    """(% the reviewer credits, % the tool credits)."""
    n = len(answers) or 1
    return (100 * sum(a.label == "correct" for a in answers) / n,
            100 * sum(a.score.outcome in CORRECT_OUTCOMES for a in answers) / n)


def report_set(answers: list[Answer], min_agreement: float) -> int:
    """Prints the figures of the whole set; the exit code as the single-run mode's."""
    unique = distinct(answers)
    total = len(unique)
    pairs = Counter((a.label, TOOL_LABEL[a.score.outcome]) for a in unique)
    agree = sum(n for (h, t), n in pairs.items() if h == t)
    credit = sum(n for (h, t), n in pairs.items() if (h == "correct") == (t == "correct"))
    false_correct = sum(n for (h, t), n in pairs.items() if t == "correct" and h != "correct")
    false_wrong = sum(n for (h, t), n in pairs.items() if h == "correct" and t != "correct")
    notes = Counter(a.note for a in unique if a.note)
    print(f"answers labelled: {total} distinct (of {len(answers)} answers in "
          f"{len({a.config for a in answers})} configs)")
    for note, n in sorted(notes.items()):
        print(f"  type: {note}: {n} answers")
    print(f"agreement on the outcome class: {_pct(agree, total)}")
    print(f"agreement on credit (correct vs not): {_pct(credit, total)}")
    print(f"false correct (tool credits, reviewer does not): {_pct(false_correct, total)}")
    print(f"false wrong (reviewer credits, tool does not): {_pct(false_wrong, total)}")
    print(f"other disagreements (wrong vs missing vs hallucinated): {total - agree - false_correct - false_wrong}")
    plain = sum(a.plain.outcome != a.score.outcome for a in unique)
    print(f"score_field alone and the pipeline differ on: {plain} answers")
    print("\nconfusion (reviewer rows x tool columns):")
    print(f"  {'':14}" + "".join(f"{t:>14}" for t in LABELS) + f"{'total':>8}")
    for h in LABELS:
        row = [pairs[(h, t)] for t in LABELS]
        print(f"  {h:14}" + "".join(f"{n:>14}" for n in row) + f"{sum(row):>8}")
    print("\ncredit per config (all its answers; reviewer vs tool, change from the first config on the same items):")
    configs = list(dict.fromkeys(a.config for a in answers))
    for c in configs:
        mine = [a for a in answers if a.config == c]
        keys = {(a.item_id, a.field) for a in mine}
        base = [a for a in answers if a.config == configs[0] and (a.item_id, a.field) in keys]
        rev, tool = _credit(mine)
        rev0, tool0 = _credit(base)
        print(f"  {c:16} {len(mine):4} answers  reviewer {rev:5.1f}% ({rev - rev0:+.1f})   "
              f"tool {tool:5.1f}% ({tool - tool0:+.1f})")
    print("\ndisagreements:")
    for a in unique:
        if a.label != TOOL_LABEL[a.score.outcome]:
            shown = (a.output or "").replace("\n", " / ")[:160]
            print(f"  {a.item_id} [{a.kind}] gold {a.gold!r}: reviewer {a.label}, tool {a.score.outcome}/"
                  f"{a.score.subcode} ({a.score.detail}): {shown!r}")
    return 0 if total and agree / total >= min_agreement and false_correct == 0 else 1


def blind_set(set_dir: Path, runs: Path | None) -> int:
    """Each distinct answer once, with its question and gold, and no score, to label."""
    _, _, questions = _intended(set_dir / "documents.yaml")
    seen: set[tuple[str, str, str | None]] = set()
    for a in set_answers(set_dir, runs, blind=True):
        if (a.item_id, a.field, a.output) in seen:
            continue
        seen.add((a.item_id, a.field, a.output))
        pack = a.item_id.split("/")[0]
        print(json.dumps({"item_id": a.item_id, "field": a.field, "kind": a.kind, "question": questions.get(
            (pack, a.field)), "gold": a.gold, "output": a.output, "first_in": a.config}, ensure_ascii=False))
    return 0


# --- one stored run ------------------------------------------------------------------------

def single_run(args: argparse.Namespace, ap: argparse.ArgumentParser) -> int:
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
                raise SetError(f"{args.labels}: no label for item {s.item_id!r} field {name!r}")
            seen.add(key)
            if "output" in labels[key] and labels[key]["output"] != s.output:
                raise SetError(f"{args.labels}: the label for item {s.item_id!r} field {name!r} is for another "
                               "answer than this run's: label the run's own answers (--blind)")
            if s.item_id in same:
                continue
            human, tool = labels[key]["label"], TOOL_LABEL[score.outcome]
            pairs[(human, tool)] += 1
            if human != tool:
                disagreements.append((s.item_id, name, human, score, s.output))
    extra = sorted(set(labels) - seen)
    if extra:
        raise SetError(f"{args.labels}: labels for fields the run does not have, e.g. {extra[0]}")
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", nargs="?")
    ap.add_argument("--labels", type=Path)
    ap.add_argument("--set", type=Path, dest="set_dir", help="an audit set: its documents.yaml, configs and labels")
    ap.add_argument("--runs", type=Path, default=Path("runs-audit"), help="where the set's runs are stored")
    ap.add_argument("--from-labels", action="store_true", help="score the answers the labels files carry (no runs)")
    ap.add_argument("--blind", action="store_true", help="print answers and golds to label, without the tool's scores")
    ap.add_argument("--min-agreement", type=float, default=0.98)
    ap.add_argument("--new-against", metavar="RUN_DIR",
                    help="count only answers that differ from this run's (a candidate's new answers)")
    args = ap.parse_args(argv)
    if (args.run_dir is None) == (args.set_dir is None):
        ap.error("give either RUN_DIR or --set DIR")
    try:
        if args.set_dir is None:
            return single_run(args, ap)
        runs = None if args.from_labels else args.runs
        if args.blind:
            return blind_set(args.set_dir, runs)
        return report_set(set_answers(args.set_dir, runs), args.min_agreement)
    except SetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
