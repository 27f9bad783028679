"""The fault instrument (docs/gate.md, 'The fault instrument'): known regressions planted into a real engine's
answers, one digit of a field's value changed or the value dropped, so the gate's power is measured on the
engine a team runs. A run through it is a measuring instrument, recorded as such in its manifest
(`instrument`), and never a candidate a gate can pass (evals/gate/_provenance.py `instrument_gaps`).
`plant` is the one planting function: the wrapper below and `evalrun calibrate` both call it."""

from __future__ import annotations

import contextlib
import random
import re
from typing import Any, Callable, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrun.contract.manifest import InstrumentRecord
from evalrun.contract.types import Generation, Item
from evalrun.runners.base import Runner, RunRequest

NUMBER = re.compile(r"\d(?:[\d,.' ]*\d)?")


def _digits(text: str | None) -> str:
    return re.sub(r"\D", "", text or "")


def _occurrences(output: str, gold: str | None) -> list[re.Match[str]]:
    """The numbers of `output` that state the gold value: those with its digits exactly, else those whose
    digits are part of it (a date's year, month and day); none for a gold without digits."""
    want = _digits(gold)
    if not want:
        return []
    spans = [m for m in NUMBER.finditer(output) if _digits(m.group()) and _digits(m.group()) in want]
    return [m for m in spans if _digits(m.group()) == want] or spans


def change_digit(output: str, gold: str | None, rng: random.Random) -> str | None:
    """`output` with one digit of the gold value's occurrence changed (CHF 1451.53 -> CHF 1457.53, the change a
    KV-cache fault makes); None when no number in the output carries the gold's digits."""
    chosen = _occurrences(output, gold)
    if not chosen:
        return None
    m = rng.choice(chosen)
    at = rng.choice([m.start() + i for i, ch in enumerate(m.group()) if ch.isdigit()])
    new = rng.choice([d for d in "0123456789" if d != output[at]])
    return output[:at] + new + output[at + 1:]


def drop_value(output: str, gold: str | None, rng: random.Random) -> str | None:
    """`output` without the gold value (a dropped amount): every place it is written as the gold is, else
    every number that states its digits; None when absent. `rng` is unused: one signature for both modes."""
    if not gold:
        return None
    spans = [m.span() for m in re.finditer(rf"(?<!\w){re.escape(gold)}(?!\w)", output, re.IGNORECASE)] \
        or [m.span() for m in _occurrences(output, gold)]
    if not spans:
        return None
    kept, at = [], 0
    for a, b in spans:
        kept.append(output[at:a])
        at = b
    return "".join(kept) + output[at:]


class FaultSpec(BaseModel):
    """`instrument.fault`: which answers the instrument changes and how."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    rate: float = Field(gt=0, le=1, description="share of the field answers changed, each independently")
    mode: Literal["digit", "drop"] = "digit"
    packs: list[str] | None = Field(default=None, min_length=1, description="the packs planted in; null: every pack")
    fields: list[str] | None = Field(default=None, min_length=1, description="the fields planted in; null: every "
                                     "field whose gold has a digit")
    seed: int = 0


class Instrument(BaseModel):
    """The top-level `instrument:` key: the run is a measuring instrument, not a candidate (it changes the key)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    fault: FaultSpec


_PLANTERS: dict[str, Callable[[str, str | None, random.Random], str | None]] = {
    "digit": change_digit, "drop": drop_value}


def plant(item: Item, output: str, spec: FaultSpec, rng: random.Random | None = None,
          names: list[str] | None = None) -> tuple[str, list[str]]:
    """`output` with each chosen field of `item` (those in `names` if given, else every field whose gold has a
    digit; within the spec's packs and fields) changed with probability `spec.rate`; returns the new text and
    the fields changed. Without `rng`, deterministic per (seed, item id), so a re-ask plants the same fault."""
    if spec.packs is not None and item.pack not in spec.packs:
        return output, []
    rng = rng or random.Random(f"fault:{spec.seed}:{item.id}")
    changed = []
    for f in item.fields:
        if (names is not None and f.name not in names) or (names is None and not _digits(f.gold)) \
                or (spec.fields is not None and f.name not in spec.fields):
            continue
        if rng.random() >= spec.rate:
            continue
        new = _PLANTERS[spec.mode](output, f.gold, rng)
        if new is not None and new != output:
            output = new
            changed.append(f.name)
    return output, changed


class FaultRunner(Runner):
    """A real runner whose answers get `plant`ed faults: generation, timing and the engine are the inner
    runner's; a changed answer's token ids are cleared (they are the unchanged answer's)."""

    def __init__(self, inner: Runner, spec: FaultSpec) -> None:  # no super().__init__: the inner runner's state
        self.inner, self.spec = inner, spec
        self.planted: dict[str, list[str]] = {}  # item id -> fields changed, this session

    def __getattr__(self, name: str) -> Any:  # what a caller asks of a particular runner (server, batch_size)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def accelerations(self) -> list[Any]:  # type: ignore[override]
        return self.inner.accelerations

    @property
    def load_seconds(self) -> float:  # type: ignore[override]
        return self.inner.load_seconds

    def render(self, item: Item) -> str:
        return self.inner.render(item)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def prompt_tokens(self, item: Item) -> int:
        return self.inner.prompt_tokens(item)

    def max_context(self) -> int | None:
        return self.inner.max_context()

    def served_context(self) -> tuple[int, str] | None:
        return self.inner.served_context()

    def preflight(self) -> str | None:
        return self.inner.preflight()

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        with self.inner.serving():
            yield

    def manifest_extras(self) -> dict[str, Any]:
        return self.inner.manifest_extras()

    def effects(self) -> dict[str, dict[str, Any]]:
        return self.inner.effects()

    def clock(self) -> str:
        return self.inner.clock()

    def kv_source(self) -> tuple[Any, int] | None:
        return self.inner.kv_source()

    def run(self, request: RunRequest, emit: Callable[[Generation], None]) -> None:
        items = {it.id: it for it in request.items}

        def planted(gen: Generation) -> None:
            item = items.get(gen.item_id)
            if item is not None and gen.output is not None and gen.error is None:
                output, names = plant(item, gen.output, self.spec)
                if names:
                    self.planted[gen.item_id] = names
                    gen = gen.model_copy(update={"output": output, "output_ids": None})
            emit(gen)

        self.inner.run(request, planted)


def wrap(runner: Runner, instrument: Instrument | None) -> Runner:
    """The runner a config's `instrument:` asks for: `runner` itself without one."""
    return runner if instrument is None else FaultRunner(runner, instrument.fault)


def record(runner: Runner, before: InstrumentRecord | None) -> dict[str, Any]:
    """The manifest's `instrument` for a run through the fault instrument: its spec and, per item, the fields
    it changed in this and earlier sessions (`before`); {} for any other runner."""
    if not isinstance(runner, FaultRunner):
        return {}
    planted = {**(before.planted if before is not None else {}), **runner.planted}
    return {"instrument": InstrumentRecord(fault=runner.spec.model_dump(mode="json"), planted=planted,
                                           items=len(planted), fields=sum(map(len, planted.values())))}


__all__ = ["FaultRunner", "FaultSpec", "Instrument", "NUMBER", "change_digit", "drop_value", "plant", "record", "wrap"]
