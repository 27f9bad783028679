"""Damaged run stores: a bad line anywhere loses nothing else, a torn tail is set aside with its
bytes, unknown keys are reported, any Unicode survives, and edited items or an unreadable
manifest are refused unless trusted."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalrun.evals import api
from evalrun.evals.files import ConfigError, jsonl
from evalrun.evals.store import RunStore, items_sha256
from evalrun.contract.types import Field, Generation, Item
from tests.fakes.runs import answered, generation

SEPARATORS = "\u2028\u2029\u0085\r\x0b\x0c\x1c\x1d\x1e\x00"


def _valid_lines(path: Path) -> dict[str, str]:
    """sha256 of every line that reads as a generation, by item id."""
    out = {}
    for raw in path.read_bytes().split(b"\n"):
        try:
            out[json.loads(raw)["item_id"]] = hashlib.sha256(raw).hexdigest()
        except (ValueError, KeyError, TypeError):
            pass
    return out


BAD_LINES = {
    "torn": b'{"item_id": "p/2", "pack": "p", "pro',
    "nul": b"\x00" * 40,
    "garbage": b"this is not json at all",
}


@pytest.mark.parametrize("kind", BAD_LINES)
def test_a_bad_line_in_the_middle_keeps_every_line_around_it(tmp_path: Path, kind: str) -> None:
    store = RunStore(tmp_path / "run")
    for i in range(5):
        store.append(generation(f"p/{i}", f"out {i}"))
    lines = store.samples_path.read_bytes().split(b"\n")
    lines[2] = BAD_LINES[kind]  # p/2 is lost to the damage, nothing else
    store.samples_path.write_bytes(b"\n".join(lines))
    before = store.samples_path.read_bytes()
    hashes = _valid_lines(store.samples_path)
    assert len(hashes) == 4

    seen: list[str] = []
    got = RunStore(store.dir, log=seen.append).read_samples(repair=True)
    assert sorted(got) == ["p/0", "p/1", "p/3", "p/4"]
    assert len(seen) == 1 and f"{store.samples_path}:3: unreadable line skipped" in seen[0], seen
    assert store.samples_path.read_bytes() == before, "a bad line in the middle is left in place untouched"

    store.append(generation("p/2", "out 2"))
    after = store.samples_path.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    assert {k: v for k, v in _valid_lines(store.samples_path).items() if k != "p/2"} == hashes
    assert sorted(store.read_samples()) == [f"p/{i}" for i in range(5)]


def test_torn_tail_bytes_are_kept_in_a_side_file_and_the_next_append_starts_clean(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    for i in range(3):
        store.append(generation(f"p/{i}", f"out {i}"))
    hashes = _valid_lines(store.samples_path)
    torn = b'{"item_id":"p/3","pack":"p","prompt_hash":"h","output":"\\u2028 half'
    with store.samples_path.open("ab") as fh:
        fh.write(torn)
    seen: list[str] = []
    assert sorted(RunStore(store.dir, log=seen.append).read_samples(repair=True)) == ["p/0", "p/1", "p/2"]
    (side,) = store.dir.glob("samples.jsonl.torn-*")
    assert side.read_bytes() == torn
    assert f"{store.samples_path}:4: torn last line" in seen[0] and side.name in seen[0]
    store.append(generation("p/3", "out 3"))
    assert _valid_lines(store.samples_path) == hashes | {"p/3": _valid_lines(store.samples_path)["p/3"]}
    assert sorted(store.read_samples()) == ["p/0", "p/1", "p/2", "p/3"]


def test_a_complete_last_line_without_newline_is_kept_and_appends_go_on_a_new_line(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.append(generation("p/0", "out 0"))
    store.samples_path.write_bytes(store.samples_path.read_bytes()[:-1])  # the newline lost, the record whole
    assert list(store.read_samples(repair=True)) == ["p/0"]
    assert not list(store.dir.glob("*.torn-*"))
    store.append(generation("p/1", "out 1"))
    assert list(store.read_samples()) == ["p/0", "p/1"] and not store.warnings


def test_a_newer_writers_unknown_key_is_read_and_reported(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "run")
    store.append(generation("p/0", "out 0"))
    line = json.loads(jsonl.encode(generation("p/1", "out 1"))) | {"kv_trace": [1, 2], "newer": True}
    with store.samples_path.open("a") as fh:
        fh.write(json.dumps(line) + "\n")
    seen: list[str] = []
    got = RunStore(store.dir, log=seen.append).read_samples()
    assert got["p/1"] == generation("p/1", "out 1")
    assert len(seen) == 1 and f"{store.samples_path}:2: unknown key(s) kv_trace, newer ignored" in seen[0]


def test_separators_and_surrogates_round_trip_in_every_file(tmp_path: Path) -> None:
    text = f"before{SEPARATORS}\ud800 lone\udfff after"
    store = RunStore(tmp_path / "run")
    item = Item(id="p/0", pack="p", prompt=text, fields=[Field(name="v", kind="text", gold=text)], meta={"m": text})
    store.write_items([item])
    store.append(generation("p/0", text))
    for path in (store.items_path, store.samples_path):
        raw = path.read_bytes()
        assert raw.isascii() and raw.count(b"\n") == 1, path
    assert store.read_items() == [item]
    assert store.read_samples()["p/0"].output == text
    store.write_manifest({"name": "u", "items_sha256": items_sha256([item])})
    scores = api.rescore(store.dir, log=lambda _m: None)
    assert scores.scored[0].output == text
    line = (store.dir / "scores.jsonl").read_bytes()
    assert line.isascii() and line.count(b"\n") == 1


def test_lines_of_the_older_writer_with_raw_separators_are_read(tmp_path: Path) -> None:
    """Earlier versions wrote raw UTF-8 (model_dump_json); str.splitlines() cut those lines apart."""
    text = "a\u2028b\u2029c\u0085d\re"
    store = RunStore(tmp_path / "run")
    store.dir.mkdir()
    item = Item(id="p/0", pack="p", prompt=text, fields=[Field(name="v", kind="text", gold=text)])
    store.items_path.write_text(item.model_dump_json() + "\n", encoding="utf-8")
    store.samples_path.write_text(generation("p/0", text).model_dump_json() + "\n", encoding="utf-8")
    assert "\u2028".encode() in store.samples_path.read_bytes()
    assert store.read_items() == [item] and store.read_samples()["p/0"].output == text
    assert store.write_items([item]) == items_sha256([item]) and not store.warnings


# st.characters(exclude_categories=()) includes lone surrogates (Cs) and every separator
_texts = st.text(st.characters(exclude_categories=()), max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(outputs=st.lists(_texts, min_size=1, max_size=8), hits=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)),
                                                                        max_size=4))
def test_random_corruption_never_loses_an_untouched_line(tmp_path: Path, outputs: list[str],
                                                         hits: list[tuple[float, int]]) -> None:
    path = tmp_path / "p.jsonl"
    path.unlink(missing_ok=True)
    gens = [generation(f"p/{i}", out) for i, out in enumerate(outputs)]
    jsonl.append(path, gens)
    raw = bytearray(path.read_bytes())
    spans, pos = [], 0
    for gen in gens:
        n = len(jsonl.encode(gen))
        spans.append((pos - 1, pos + n))  # the line, its newline and the newline before it
        pos += n
    touched = set()
    for where, byte in hits:
        at = min(int(where * len(raw)), len(raw) - 1)
        raw[at] = byte
        touched.add(at)
    path.write_bytes(bytes(raw))
    records, _ = jsonl.read(path, Generation, lambda _m: None)
    by_start = {line.start: rec for line, rec in records}
    for gen, (before, end) in zip(gens, spans):
        if not any(before <= t < end for t in touched):
            assert by_start.get(before + 1) == gen


def _stored(root: Path, golds: list[str]) -> RunStore:
    items = [Item(id=f"n/{i}", pack="n", prompt=f"q{i}", fields=[Field(name="v", kind="number", gold=g)])
             for i, g in enumerate(golds)]
    store = RunStore(root)
    store.write_manifest({"name": root.name, "items_sha256": items_sha256(items)})
    store.write_items(items)
    for it in items:
        store.append(answered(it, it.fields[0].gold, pack="n"))
    return store


def test_edited_gold_is_refused_unless_trusted(tmp_path: Path) -> None:
    store = _stored(tmp_path / "run", ["1", "2", "3"])
    assert api.rescore(store.dir, log=lambda _m: None).metrics
    store.items_path.write_text(store.items_path.read_text().replace('"gold":"2"', '"gold":"5"'))
    with pytest.raises(ConfigError, match="items.jsonl was changed after the run") as info:
        api.rescore(store.dir, log=lambda _m: None)
    assert str(store.items_path) in str(info.value)
    seen: list[str] = []
    trusted = api.rescore(store.dir, trust_edited_items=True, log=seen.append)
    assert sum(s.correct for s in trusted.scored) == 2
    assert any("--trust-edited-items" in w and str(store.items_path) in w for w in seen), seen


def test_garbage_manifest_is_refused_and_an_old_run_without_hash_is_warned(tmp_path: Path) -> None:
    store = _stored(tmp_path / "run", ["1", "2"])
    store.manifest_path.write_text("{garbage")
    with pytest.raises(ConfigError, match="not valid JSON") as info:
        api.rescore(store.dir, log=lambda _m: None)
    assert str(store.manifest_path) in str(info.value)
    assert api.rescore(store.dir, trust_edited_items=True, log=lambda _m: None).scored
    store.write_manifest({"name": "old"})
    seen: list[str] = []
    assert api.rescore(store.dir, log=seen.append).scored
    assert any("cannot be verified" in w for w in seen), seen
