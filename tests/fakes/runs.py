"""Typed builders for what a run is made of, with no model and no store: a generation, a scored item,
a run with its manifest. Each takes keyword overrides for any other field, so a test spells out only
what it is about."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from evalrun.contract import Generation, Item, RunManifest
from evalrun.contract.types import FieldScore
from evalrun.evals.results import RunResult
from evalrun.evals.scoring import ScoredItem


def _pack_of(item_id: str) -> str:
    """An item id's pack: its part before the first "/" ("p" for an id without one)."""
    return item_id.split("/", 1)[0] if "/" in item_id else "p"


def generation(item_id: str = "p/0", output: str | None = "x", **over: Any) -> Generation:
    """One line of samples.jsonl: `item_id` (its pack the part before "/") answered with `output`."""
    over.setdefault("pack", _pack_of(item_id))
    over.setdefault("prompt_hash", "h")
    return Generation(item_id=item_id, output=output, **over)


def answered(item: Item, output: str | None = "x", **over: Any) -> Generation:
    """The generation answering `item` (its id, pack and prompt hash, unless `over` says otherwise) with `output`."""
    over.setdefault("pack", item.pack)
    over.setdefault("prompt_hash", item.prompt_hash)
    return Generation(item_id=item.id, output=output, **over)


def scored(item_id: str, outcomes: dict[str, str | FieldScore], *, kinds: str | dict[str, str] = "amount",
           golds: str | None | dict[str, str | None] = "1", output: str | None = "x", prompt_hash: str = "h",
           **over: Any) -> ScoredItem:
    """One item's outcome: `outcomes` maps each field to its outcome ("correct", "wrong_value", ...) or
    a whole FieldScore; `kinds` and `golds` are one for every field or one per field; the pack is the
    item id's part before "/"."""
    fields = {k: v if isinstance(v, FieldScore) else FieldScore(outcome=v) for k, v in outcomes.items()}
    over.setdefault("pack", _pack_of(item_id))
    return ScoredItem(item_id=item_id, prompt_hash=prompt_hash, output=output, fields=fields,
                      kinds=kinds if isinstance(kinds, dict) else {k: kinds for k in fields},
                      golds=golds if isinstance(golds, dict) else {k: golds for k in fields}, **over)


def run_result(name: str, items: list[Item], gens: Iterable[Generation] | dict[str, Generation],
               dir: Path | None = None, **manifest: Any) -> RunResult:
    """A stored run as `load` gives it: `name` in /runs/`name` (or `dir`), its items, their generations
    (keyed by item id) and a manifest of its name and `manifest`."""
    by_id = dict(gens) if isinstance(gens, dict) else {g.item_id: g for g in gens}
    return RunResult(name, dir or Path(f"/runs/{name}"), items, by_id,
                     RunManifest.model_validate({"name": name, **manifest}))
