"""Shared-prefix reuse: questions about one document share its prefilled KV and
produce exactly the tokens the unshared path produces."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare


def _doc_config(model: str, **over) -> dict:
    data = {"name": "docs", "model": model, "batch_size": 4, "generation": {"max_new_tokens": 12},
            "tasks": [{"pack": "doc_fields", "documents": 2, "lengths": [400], "mode": "per_field", "doc_types": ["invoice"],
                       "fields": ["total", "tax", "due_date", "invoice_number", "currency", "subtotal"]}]}
    data.update(over)
    return data


def _pair(model: str, out: Path, limit: int | None = None, **over):
    plain = execute(prepare(parse_config(_doc_config(model, **over)), out, limit=limit), log=lambda _: None)
    shared = execute(prepare(parse_config(_doc_config(model, prefix_reuse=True, **over)), out, limit=limit),
                     log=lambda _: None)
    return plain, shared


@pytest.mark.slow
def test_shared_prefix_outputs_equal_the_unshared_path(tiny_model_dir: Path, tmp_path: Path) -> None:
    plain, shared = _pair(str(tiny_model_dir), tmp_path)
    assert plain.manifest["key"] != shared.manifest["key"]
    stats = shared.manifest["prefix_reuse"]
    assert stats["documents"] == 2 and stats["questions"] == len(shared.items)
    assert stats["tokens_saved"] > 0
    for item_id, gen in plain.generations.items():
        assert shared.generations[item_id].output_ids == gen.output_ids, item_id
    # six questions per document at batch 4: the plan's least-padding split is 3 + 3, each batch sharing one cache
    assert {g.batch_size for g in shared.generations.values()} == {3}
    # the same prompts; prefill computed each document once instead of once per question
    sb, pb = shared.manifest["batching"], plain.manifest["batching"]
    assert sb["prompt_tokens"] == pb["prompt_tokens"]
    assert sb["padded_prefill_tokens"] < pb["padded_prefill_tokens"] - stats["tokens_saved"] // 2


def test_groups_are_by_document(tiny_model_dir: Path, tmp_path: Path) -> None:
    prepared = prepare(parse_config(_doc_config(str(tiny_model_dir), prefix_reuse=True)), tmp_path)
    groups, alone = prepared.runner._shared_prefixes(prepared.items)
    assert not alone
    assert sorted(len(m) for _, m in groups) == sorted(
        sum(1 for it in prepared.items if it.meta["doc_id"] == d) for d in {it.meta["doc_id"] for it in prepared.items})
    for prefix, members in groups:
        assert len({it.meta["doc_id"] for it in members}) == 1
        text = prepared.runner.tokenizer.decode(prefix)
        assert members[0].question not in text


@pytest.mark.slow
def test_a_method_with_its_own_cache_turns_reuse_off(tiny_model_dir: Path, tmp_path: Path) -> None:
    data = _doc_config(str(tiny_model_dir), prefix_reuse=True)
    data["acceleration"] = {"kv_cache": {"quant": "int8", "backend": "simulated"}}
    run = execute(prepare(parse_config(data), tmp_path, limit=3), log=lambda _: None)
    assert run.manifest["prefix_reuse"]["documents"] == 0
    assert "kv_cache" in run.manifest["prefix_reuse"]["off_because"]


@pytest.mark.model
def test_shared_prefix_matches_on_the_default_model(tmp_path: Path) -> None:
    plain, shared = _pair("smollm2-135m", tmp_path, limit=6)
    assert shared.manifest["prefix_reuse"]["questions"] == 6
    assert {k: g.output for k, g in shared.generations.items()} == {k: g.output for k, g in plain.generations.items()}


def test_the_split_comes_from_the_given_context_not_from_the_wording() -> None:
    """The document quotes the question word for word: the split is still where the context ends."""
    from evalrun.contract.types import CONTEXT_SEPARATOR, Item
    from evalrun.runners.hf.prefix import split_at_question

    question = "Question: What is the total?"
    context = f"Read this.\n\n{question} Someone asked this before; the total is 5.\n\nMore text."
    item = Item(id="a", pack="p", prompt=context + CONTEXT_SEPARATOR + question, context=context,
                question=question, fields=[])
    text = f"<|im_start|>user\n{item.prompt}<|im_end|>\n<|im_start|>assistant\n"
    offsets = [(i, i + 1) for i in range(len(text))]  # one token per character
    split = split_at_question(text, item, offsets)
    assert text[split:].startswith(question + "<|im_end|>")
    assert text[:split].endswith(context + CONTEXT_SEPARATOR)
    bare = Item(id="b", pack="p", prompt=item.prompt, fields=[])  # no context given: no split
    assert split_at_question(text, bare, offsets) is None
