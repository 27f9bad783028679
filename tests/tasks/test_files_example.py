"""The worked example in examples/invoices (the `files` walk-through in docs/packs.md) is a real
config: it validates, and builds its items with the default model's own tokenizer."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrun.contract.types import CONTEXT_SEPARATOR
from evalrun.evals.config import load_config
from evalrun.tasks import BuildOptions, get_pack

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "invoices" / "files.yaml"
FIELDS = ["invoice_number", "total", "due_date", "currency", "vendor"]
IDS = ["inv-01", "inv-02", "inv-03", "inv-04", "inv-05"]


def test_the_example_extends_the_baseline_and_names_its_packs() -> None:
    cfg = load_config(EXAMPLE)
    baseline = load_config(ROOT / "configs" / "baseline.yaml")
    assert cfg.model == baseline.model and cfg.generation == baseline.generation and cfg.prefix_reuse
    assert [t.pack for t in cfg.tasks] == ["files", "files"]  # the baseline's tasks are replaced
    per_field, as_json = (t.params for t in cfg.tasks)
    assert (per_field.name, as_json.name) == ("invoices", "invoices_json")
    assert Path(per_field.path) == EXAMPLE.parent / "invoices.csv"
    assert list(per_field.fields) == FIELDS and per_field.date_order == "dmy"


@pytest.mark.model
def test_the_example_builds_with_the_default_tokenizer(smol_dir: str) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smol_dir)

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    cfg = load_config(EXAMPLE)
    options = BuildOptions(max_prompt_tokens=2048 - cfg.generation.max_new_tokens)
    per_field, as_json = (get_pack("files").items(t.params, count, options) for t in cfg.tasks)
    assert [it.id for it in per_field] == [f"invoices/{i}/{f}" for i in IDS for f in FIELDS]
    assert {it.pack for it in per_field} == {"invoices"}
    for it in per_field:
        assert it.meta.context_tokens == count(it.prompt) and "truncated" not in it.meta
        if it.fields[0].name == "vendor":
            assert it.context is None and it.prompt.endswith("Answer with its name only.")
        else:
            assert it.prompt == it.context + CONTEXT_SEPARATOR + it.question
    for row in range(5):
        contexts = {it.context for it in per_field if it.meta.row == row and it.context is not None}
        assert len(contexts) == 1  # four questions, one shared document to prefill once
    golds = {it.id: it.fields[0].gold for it in per_field}
    assert golds["invoices/inv-01/total"] == "CHF 6486.00" and golds["invoices/inv-03/due_date"] is None
    assert golds["invoices/inv-05/currency"] == "euro"
    dates = [it for it in per_field if it.fields[0].kind == "date"]
    assert all(it.fields[0].options == {"date_order": "dmy"} for it in dates)
    assert [it.id for it in as_json] == [f"invoices_json/{i}" for i in IDS]
    assert all(it.answer_format == "json" and [f.name for f in it.fields] == FIELDS for it in as_json)
    assert all(it.meta.context_tokens == count(it.prompt) for it in as_json)
