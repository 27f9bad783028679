"""The fault instrument (runners/fault.py): what it plants, the config key and run key it makes, and why a run
through it can fail but never pass (docs/gate.md, 'The fault instrument')."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from evalrun.contract.manifest import InstrumentRecord, RunManifest
from evalrun.contract.types import Field, Generation, Item
from evalrun.evals.config import load_config
from evalrun.evals.files import ConfigError
from evalrun.evals.compare import pair
from evalrun.evals.gate import GateConfig, collapse_rule, evaluate, instrument_gaps, load_gate
from evalrun.evals.run import key_payload
from evalrun.evals.run._early_stop import EarlyStop
from evalrun.evals.scoring import score_item, stability
from evalrun.evals.store import run_key
from evalrun.runners.fault import FaultSpec, change_digit, drop_value, plant
from evalrun.runners.models import ModelSource
from tests.conftest import ROOT
from tests.fakes.openai_server import exact_answer, items_of

NEEDLES = {"pack": "needle_numbers", "lengths": [256, 512], "depths": [0.0, 0.5, 1.0], "values": ["integer", "amount"]}
DOCS = {"pack": "doc_fields", "documents": 6, "lengths": [600], "fields": ["total", "due_date", "invoice_number"]}


@pytest.fixture(scope="module")
def items() -> list[Item]:
    return items_of([NEEDLES, DOCS])


def test_change_digit_changes_one_digit_of_the_gold_occurrence() -> None:
    rng = random.Random(1)
    for _ in range(50):
        out = change_digit("Invoice 12 of 2024: total CHF 1,451.53 due.", "1451.53", rng)
        assert out is not None and len(out) == len("Invoice 12 of 2024: total CHF 1,451.53 due.")
        diff = [i for i, (a, b) in enumerate(zip(out, "Invoice 12 of 2024: total CHF 1,451.53 due.")) if a != b]
        assert len(diff) == 1 and 30 <= diff[0] < 38  # inside "1,451.53", never the 12 or the year
    assert change_digit("no number here", "1451.53", rng) is None
    assert change_digit("total 99", "1451.53", rng) is None and change_digit("x 7", None, rng) is None


def test_drop_value_removes_every_statement_of_the_gold() -> None:
    rng = random.Random(0)
    assert drop_value("total: 1451.53\nnote: 1451.53", "1451.53", rng) == "total: \nnote: "
    assert drop_value("total: CHF 1,451.53", "1451.53", rng) == "total: CHF "  # written otherwise: by its digits
    assert drop_value("due 2024-03-15.", "2024-03-15", rng) == "due ."
    assert drop_value("due 15.03.2024", "2024-03-15", rng) is None  # another date format: not its digits in order
    assert drop_value("the year 12024", "2024", rng) is None  # not a part of another number
    assert drop_value("nothing", "1451.53", rng) is None and drop_value("x", None, rng) is None


def test_a_planted_fault_turns_the_right_field_wrong(items: list[Item]) -> None:
    for mode in ("digit", "drop"):
        spec = FaultSpec(rate=1.0, mode=mode)
        for item in items:
            answer = exact_answer(item)
            assert all(score_item(item, _gen(item, answer)).field_right(f.name) for f in item.fields if f.gold)
            new, changed = plant(item, answer, spec)
            digits = [f.name for f in item.fields if any(c.isdigit() for c in f.gold or "")]
            assert changed == digits, (item.id, mode, answer, new)
            scored = score_item(item, _gen(item, new))
            assert not any(scored.field_right(n) for n in changed), (mode, answer, new)


def test_plant_is_deterministic_per_seed_and_item_and_keeps_to_its_packs_fields_and_rate(items: list[Item]) -> None:
    spec = FaultSpec(rate=0.5, packs=["doc_fields"], fields=["total", "due_date"])
    runs = [[plant(it, exact_answer(it), spec) for it in items] for _ in range(2)]
    assert runs[0] == runs[1]
    other = [plant(it, exact_answer(it), spec.model_copy(update={"seed": 7})) for it in items]
    assert other != runs[0]
    for it, (new, changed) in zip(items, runs[0]):
        assert set(changed) <= {"total", "due_date"} and (it.pack == "doc_fields" or (not changed and
                                                                                        new == exact_answer(it)))
    # independent per field at `rate`: over many items the share planted is near it
    many = [it.model_copy(update={"id": f"{it.id}#{k}"}) for k in range(60) for it in items
            if it.pack == "doc_fields" and it.fields[0].name in ("total", "due_date")]
    share = sum(len(plant(it, exact_answer(it), spec)[1]) for it in many) / len(many)
    assert 0.43 < share < 0.57, share
    # the caller's rng and names (evals/calibrate): only those fields, drawn from that rng
    two = Item(id="two", pack="doc_fields", prompt="p",
               fields=[Field(name="total", kind="amount", gold="EUR 97727.56"),
                       Field(name="due_date", kind="date", gold="2023-07-11")])
    answer = "total: EUR 97727.56\ndue_date: 2023-07-11"
    new, changed = plant(two, answer, FaultSpec(rate=1.0), random.Random(3), names=["due_date"])
    assert changed == ["due_date"] and new.startswith("total: EUR 97727.56\n") and "2023-07-11" not in new
    assert plant(two, answer, FaultSpec(rate=1.0), random.Random(3), names=["due_date"]) == (new, changed)
    assert plant(two, answer, FaultSpec(rate=1.0))[1] == ["total", "due_date"]


def _gen(item: Item, output: str) -> Generation:
    return Generation(item_id=item.id, pack=item.pack, prompt_hash="h", output=output)


def _config(tmp_path: Path, instrument: str | None, name: str = "inst") -> Path:
    """The shipped baseline under another name, with `instrument:` (YAML flow text) when given."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"extends: {ROOT / 'configs' / 'baseline.yaml'}\nname: {name}\n"
                    + (f"instrument: {instrument}\n" if instrument is not None else ""))
    return path


def test_the_instrument_key_is_validated_and_makes_another_run(tmp_path: Path) -> None:
    source = ModelSource("pinned", "dir", "/pinned", {"pinned": "identity"})
    plain = load_config(_config(tmp_path, None))
    inst = load_config(_config(tmp_path, "{fault: {rate: 0.9, mode: digit, packs: [needle_numbers]}}"))
    assert plain.instrument is None and inst.instrument is not None and inst.instrument.fault.rate == 0.9
    base_key = run_key(key_payload(load_config(ROOT / "configs" / "baseline.yaml"), source, "cpu", "float32"))
    assert run_key(key_payload(plain, source, "cpu", "float32")) == base_key  # the name is not in the key
    assert run_key(key_payload(inst, source, "cpu", "float32")) != base_key
    for bad, where in (("{fault: {rate: 0}}", "instrument.fault.rate"),
                       ("{fault: {rate: 1.5}}", "instrument.fault.rate"),
                       ("{fault: {rate: 0.5, mode: flip}}", "instrument.fault.mode"),
                       ("{fault: {rate: 0.5, seeds: 1}}", "instrument.fault.seeds"),
                       ("{faults: {}}", "instrument.fault"),
                       ("{fault: {rate: 0.5, packs: [needle_number]}}", "instrument.fault.packs")):
        with pytest.raises(ConfigError) as err:
            load_config(_config(tmp_path, bad, "bad"))
        assert err.value.path == where, (bad, err.value.path)


def test_an_instrument_can_fail_never_pass_and_is_never_a_baseline() -> None:
    record = InstrumentRecord(fault={"rate": 0.9, "mode": "digit", "packs": ["needle_numbers"], "fields": None,
                                     "seed": 0}, planted={"a": ["value"]}, items=1, fields=1)
    assert record.text() == "fault injection: rate 0.9, digit, packs needle_numbers"
    plain, inst = RunManifest(name="base"), RunManifest(name="faulty", instrument=record)
    assert instrument_gaps(plain, plain) == []
    (gap,) = instrument_gaps(plain, inst)
    assert gap.reason == ("faulty is a measuring instrument (fault injection: rate 0.9, digit, packs needle_numbers), "
                          "not a candidate: it can fail, never pass")
    with pytest.raises(ConfigError, match="baseline faulty is a measuring instrument") as err:
        instrument_gaps(inst, plain)
    assert err.value.path == "instrument"
    again = RunManifest.model_validate(inst.to_dict())
    assert again.instrument == record
    # a manifest recreated from the config (no record) is still the instrument's
    recreated = RunManifest.model_validate({"name": "faulty", "config": {"instrument": {"fault": record.fault}}})
    assert instrument_gaps(plain, recreated) == [gap]
    assert RunManifest.model_validate({"config": {"instrument": None}}).instrument_record is None


def test_collapse_false_drops_the_rule_and_the_canary(items: list[Item]) -> None:
    off = load_gate({"collapse": False})
    assert GateConfig().collapse and not off.collapse
    base = [score_item(it, _gen(it, exact_answer(it))) for it in items]
    marks = [score_item(it, _gen(it, "????")) for it in items]
    assert collapse_rule(GateConfig(), "c", items, base, marks)[0].status == "fail"
    assert collapse_rule(off, "c", items, base, marks) == []
    notes = " ".join(evaluate(pair(base, marks, "b", "c", n_resamples=1), off).notes)
    assert "collapse is disabled by the gate" in notes
    assert "collapse is disabled" not in " ".join(evaluate(pair(base, marks, "b", "c", n_resamples=1)).notes)
    stab = stability([base])
    for collapse, decided in ((True, True), (False, False)):
        watch = EarlyStop(base, items, {}, 0.95, stab, collapse)
        assert any([watch.observe(_gen(it, "????")) for it in items]) is decided
