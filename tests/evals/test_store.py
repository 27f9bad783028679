"""The run store: append-only samples, a torn last line set aside, first line wins, keys that separate configs."""

from __future__ import annotations

from pathlib import Path

from evalrun.evals.config import parse_config
from evalrun.evals.run import key_payload
from evalrun.evals.store import RunStore, run_key
from evalrun.runners.models import ModelSource
from tests.fakes.runs import generation


def test_append_and_read(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    for i in range(3):
        store.append(generation(f"p/{i}", f"out {i}"))
    assert list(store.read_samples()) == ["p/0", "p/1", "p/2"]


def test_torn_last_line_is_moved_to_a_side_file(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.append(generation("p/0", "out 0"))
    store.append(generation("p/1", "out 1"))
    torn = b'{"item_id": "p/2", "pack": "p", "prom'  # killed mid-write
    with store.samples_path.open("ab") as fh:
        fh.write(torn)
    assert list(store.read_samples()) == ["p/0", "p/1"], "a reader only reports the torn line"
    assert store.samples_path.read_bytes().endswith(torn)
    assert list(store.read_samples(repair=True)) == ["p/0", "p/1"]
    sides = list(store.dir.glob("samples.jsonl.torn-*"))
    assert len(sides) == 1 and sides[0].read_bytes() == torn, "the torn bytes are kept exactly"
    assert any("samples.jsonl:3" in w and sides[0].name in w for w in store.warnings), store.warnings
    store.append(generation("p/2", "out 2"))
    lines = store.samples_path.read_bytes().split(b"\n")
    assert len(lines) == 4 and lines[-1] == b""
    assert list(store.read_samples()) == ["p/0", "p/1", "p/2"]


def test_duplicate_ids_keep_the_first(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.append(generation("p/0", "out 0"))
    store.append(generation("p/0", "second"))
    assert store.read_samples()["p/0"].output == "out 0"


def test_manifest_is_replaced_atomically(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.write_manifest({"a": 1})
    store.write_manifest({"a": 2})
    assert store.read_manifest() == {"a": 2}
    assert [p.name for p in store.dir.iterdir()] == ["manifest.json"]


BASE = {"name": "b", "model": "x.gguf", "tasks": [{"pack": "needle_numbers", "lengths": [512]}]}
SOURCE = ModelSource("x", "gguf", "/x.gguf", {"gguf_sha256": "abc"})


def _key(data: dict) -> str:
    return run_key(key_payload(parse_config(data), SOURCE, "cpu", "float32"))


def test_key_ignores_name_but_not_what_changes_outputs() -> None:
    base = _key(BASE)
    assert _key({**BASE, "name": "other"}) == base
    assert _key({**BASE, "acceleration": {"kv_cache": {"quant": "int4"}}}) != base
    assert _key({**BASE, "acceleration": {"kv_cache": {"quant": "int2"}}}) != _key(
        {**BASE, "acceleration": {"kv_cache": {"quant": "int4"}}}
    )
    assert _key({**BASE, "generation": {"max_new_tokens": 10}}) != base
    assert _key({**BASE, "batch_size": 1}) != base
    assert _key({**BASE, "tasks": [{"pack": "needle_numbers", "lengths": [1024]}]}) != base
    other_model = ModelSource("x", "gguf", "/x.gguf", {"gguf_sha256": "def"})
    assert run_key(key_payload(parse_config(BASE), other_model, "cpu", "float32")) != base
    assert run_key(key_payload(parse_config(BASE), SOURCE, "cuda", "bfloat16")) != base


def test_key_follows_the_draft_models_content(tmp_path: Path) -> None:
    draft = tmp_path / "draft"
    draft.mkdir()
    (draft / "config.json").write_text('{"model_type": "llama"}')
    data = {**BASE, "acceleration": {"speculative": {"method": "draft_model", "draft": str(draft)}}}
    first = _key(data)
    assert _key(data) == first
    (draft / "config.json").write_text('{"model_type": "llama", "hidden_size": 64}')
    assert _key(data) != first, "new draft weights must not reuse stored results"
