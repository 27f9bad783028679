"""Runs stored before items had context/question/answer_format as fields: their
items.jsonl (question and answer format inside meta) and the items_sha256 recorded
over that form still verify, score, and are reused by `execute` instead of being
refused as edited."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evalrun.evals import api
from evalrun.evals.files import ConfigError
from evalrun.evals.config import parse_config
from evalrun.evals.run import execute, prepare
from evalrun.evals.store import RunStore, items_sha256, v1_items_sha256
from evalrun.contract.types import Item
from tests.conftest import tiny_config
from tests.fakes.runs import generation
from tests.contract.test_items import LEGACY_DOC, LEGACY_FILES, LEGACY_LATENCY, LEGACY_NEEDLE


def _old_hash(records: list[dict]) -> str:
    """items_sha256 exactly as evalrun computed it then: sorted canonical JSON of each old Item."""
    digest = hashlib.sha256()
    for text in sorted(json.dumps(r, ensure_ascii=True, sort_keys=True, separators=(",", ":")) for r in records):
        digest.update(text.encode("ascii") + b"\n")
    return digest.hexdigest()


def _old_line(item: Item) -> dict:
    """The line today's pack output would have been written as before the fields existed."""
    data = item.model_dump(mode="json")
    context, question, answer_format = data.pop("context"), data.pop("question"), data.pop("answer_format")
    if item.pack == "doc_fields":
        data["meta"]["answer_format"] = answer_format
    if question is not None:
        assert context is not None
        data["meta"]["question"] = question
    return data


def _write_legacy(root: Path, records: list[dict], outputs: dict[str, str] | None = None) -> RunStore:
    store = RunStore(root)
    root.mkdir(parents=True, exist_ok=True)
    store.items_path.write_bytes(b"".join(json.dumps(r, ensure_ascii=True).encode() + b"\n" for r in records))
    store.write_manifest({"name": root.name, "items_sha256": _old_hash(records)})
    for r in records:
        prompt_hash = hashlib.sha256(json.dumps([r["system"], r["prompt"]], ensure_ascii=False)
                                     .encode("utf-8")).hexdigest()[:16]
        store.append(generation(r["id"], (outputs or {}).get(r["id"], "EUR 14,851.20"), pack=r["pack"],
                                prompt_hash=prompt_hash))
    return store


LEGACY = [LEGACY_NEEDLE, LEGACY_DOC, LEGACY_FILES, LEGACY_LATENCY]


def test_the_old_hash_still_verifies_the_old_file(tmp_path: Path) -> None:
    store = _write_legacy(tmp_path / "run", LEGACY)
    assert v1_items_sha256(store.items_path.read_bytes().splitlines()) == _old_hash(LEGACY)
    manifest, items = RunStore(store.dir).read_checked()
    assert manifest["items_sha256"] != items_sha256(items)  # recorded over the older form
    by_id = {it.id: it for it in items}
    assert by_id[LEGACY_DOC["id"]].question == LEGACY_DOC["meta"]["question"]
    assert by_id[LEGACY_FILES["id"]].answer_format == "json"
    scored = api.rescore(store.dir, log=lambda _m: None)
    assert {s.item_id for s in scored.scored} == {r["id"] for r in LEGACY}


def test_an_edited_old_file_is_still_refused(tmp_path: Path) -> None:
    store = _write_legacy(tmp_path / "run", LEGACY)
    store.items_path.write_text(store.items_path.read_text().replace('"EUR 14851.20"', '"EUR 14851.21"'))
    with pytest.raises(ConfigError, match="items.jsonl was changed after the run"):
        RunStore(store.dir).read_checked()


@pytest.mark.slow
def test_execute_reuses_a_run_stored_in_the_old_form(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = parse_config(tiny_config(tiny_model_dir))
    first = execute(prepare(cfg, tmp_path), log=lambda _m: None)
    assert first.generated == len(first.items) and all(it.context for it in first.items)
    store = RunStore(first.dir)
    old = [_old_line(it) for it in first.items]
    store.items_path.write_bytes(b"".join(json.dumps(r, ensure_ascii=True).encode() + b"\n" for r in old))
    store.write_manifest(store.read_manifest() | {"items_sha256": _old_hash(old)})
    RunStore(first.dir).read_checked()  # verifies before execute touches it

    seen: list[str] = []
    again = execute(prepare(cfg, tmp_path), log=seen.append)
    assert again.reused and again.generated == 0, seen
    assert any("reusing stored run" in m for m in seen), seen
    assert again.items == first.items and again.generations == first.generations
    # from now on the manifest records the current form's hash, and still verifies
    manifest, items = RunStore(first.dir).read_checked()
    assert manifest["items_sha256"] == items_sha256(items) == items_sha256(first.items)
