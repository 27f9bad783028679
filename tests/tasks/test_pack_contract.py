"""Contract tests over every registered pack (parametrized from the registry, so a new
pack is tested the moment its file exists): deterministic to the byte, the metadata
runners and evals read is there, and item hashes do not depend on the process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalrun.contract.types import CONTEXT_SEPARATOR, Item
from evalrun.tasks import all_packs, get_pack
from tests.conftest import ROOT


def count(text: str) -> int:
    """A cheap, deterministic stand-in for a tokenizer: words and line breaks."""
    return len(text.split()) + text.count("\n")


def _files_data(tmp: Path) -> Path:
    path = tmp / "docs.jsonl"
    rows = [{"doc": f"Invoice {i}. The total is EUR {100 + i}.50.", "total": f"EUR {100 + i}.50"} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# Small parameters per pack, and whether its items are questions about a document
# (then each must carry its context and question). Every registered pack needs an entry.
SMALL: dict[str, tuple[dict[str, Any], bool]] = {
    "needle_numbers": ({"lengths": [96, 200], "depths": [0.0, 1.0]}, True),
    "doc_fields": ({"documents": 3, "lengths": [400]}, True),
    "latency": ({"shapes": [{"name": "tiny", "input_tokens": 48, "output_tokens": 4}], "count": 2}, False),
    "files": ({"fields": {"total": "amount"}, "prompt": "Find the total.\n\n{doc}"}, False),
}
JSON_MODE = {"doc_fields": {"documents": 2, "lengths": [700], "mode": "json"}}


def _params(name: str, data_dir: Path, override: dict[str, Any] | None = None) -> dict[str, Any]:
    params = dict(override or SMALL[name][0])
    if name == "files":
        params["path"] = str(_files_data(data_dir))
    return params


def _build(name: str, params: dict[str, Any]) -> list[Item]:
    spec = get_pack(name)
    return spec.items(spec.params.model_validate(params), count)


def _lines(items: list[Item]) -> list[str]:
    return [it.model_dump_json() for it in items]


PACKS = sorted(all_packs())


def test_every_pack_has_small_parameters_here() -> None:
    assert sorted(SMALL) == PACKS


@pytest.mark.parametrize("name", PACKS)
def test_deterministic_to_the_byte(name: str, tmp_path: Path) -> None:
    params = _params(name, tmp_path)
    first, second = _build(name, params), _build(name, params)
    assert first and _lines(first) == _lines(second)
    assert len({it.id for it in first}) == len(first)
    assert all(it.pack == name for it in first)


@pytest.mark.parametrize(("name", "override"), [*[(n, None) for n in PACKS], *JSON_MODE.items()])
def test_items_carry_what_runners_and_evals_read(name: str, override: dict | None, tmp_path: Path) -> None:
    about_document = SMALL[name][1]
    for it in _build(name, _params(name, tmp_path, override)):
        assert it.meta.context_tokens == count(it.prompt), it.id
        assert isinstance(it.meta.target_tokens, int) or name == "files"
        # scored items say how their answer is read; speed-only items have nothing to read
        assert (it.answer_format is not None) == bool(it.fields), it.id
        if about_document:
            assert it.context and it.question, it.id
            assert it.prompt == it.context + CONTEXT_SEPARATOR + it.question
            assert not it.question.startswith("\n") and CONTEXT_SEPARATOR not in it.question
        # what later stages read, typed: a stored line reads back as the same item
        assert Item.model_validate_json(it.model_dump_json()) == it


def test_json_mode_items_say_json() -> None:
    items = _build("doc_fields", JSON_MODE["doc_fields"])
    assert {it.answer_format for it in items} == {"json"}
    for it in items:
        assert set(it.meta.fields or {}) == {f.name for f in it.fields}


_CHILD = """
import json, sys
from tests.tasks.test_pack_contract import _build
from evalrun.evals.store import items_sha256
name, params = sys.argv[1], json.loads(sys.argv[2])
items = _build(name, params)
print(json.dumps([items_sha256(items), [it.prompt_hash for it in items]]))
"""


@pytest.mark.parametrize("name", PACKS)
@pytest.mark.slow
def test_hashes_are_the_same_in_another_process(name: str, tmp_path: Path) -> None:
    """A different hash seed in a fresh interpreter: set or dict order must not leak into items."""
    from evalrun.evals.store import items_sha256

    params = _params(name, tmp_path)
    items = _build(name, params)
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", _CHILD, name, json.dumps(params)], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True, timeout=300)
    digest, prompt_hashes = json.loads(out.stdout.strip().splitlines()[-1])
    assert digest == items_sha256(items)
    assert prompt_hashes == [it.prompt_hash for it in items]


@pytest.mark.model
@pytest.mark.parametrize("name", ["needle_numbers", "doc_fields"])
def test_real_tokenizer_context_tokens(name: str, smol_dir: str) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smol_dir)

    def real(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    spec = get_pack(name)
    params = spec.params.model_validate({"needle_numbers": {"lengths": [256], "depths": [0.5]},
                                         "doc_fields": {"documents": 1, "lengths": [500]}}[name])
    items = spec.items(params, real)
    assert items == spec.items(params, real)
    for it in items:
        assert it.meta.context_tokens == real(it.prompt) <= it.meta.target_tokens
        assert it.context and it.prompt.endswith(CONTEXT_SEPARATOR + it.question)
