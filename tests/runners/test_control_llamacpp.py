"""The control arm on the real llama.cpp server (built by `make engines-llamacpp`): q4_0 K and V caches
(which bring flash attention with them) against f16, with f16 + flash attention as the control, in one
command. The measured finding (docs/served-engines.md): of q4_0's two flips on `invoice-3`, the tax flip
is flash attention's (the control has it too), the due-date flip the quantized cache's own.

Only the doc_fields items asking for tax and due_date are generated (5 per config, 15 in all); their
prompts are the shipped configs' byte for byte, so the flips are the ones the full demo run found."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
import yaml

from evalrun.evals.config import load_config
from evalrun.evals.run import prepare
from tests.conftest import run_cli
from tests.runners.test_server_lifecycle import ENGINE_CONFIGS, _assert_none_left, _engine_config, needs_engine

SHIPPED = yaml.safe_load((ENGINE_CONFIGS / "llamacpp-f16.yaml").read_text())
TASKS = [t | {"fields": ["tax", "due_date"]} for t in SHIPPED["tasks"] if t["pack"] == "doc_fields"]
TOKENS = SHIPPED["generation"]["max_new_tokens"]  # the shipped budget: the answers are the demo run's


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.timeout(1800)
@needs_engine
def test_the_control_attributes_the_tax_flip_to_flash_attention_and_the_due_date_to_q4_0(tmp_path: Path) -> None:
    mark, out = uuid.uuid4().hex, tmp_path / "runs"
    base, cand, ctrl = (_engine_config(tmp_path, f"llamacpp-{n}.yaml", mark, tasks=TASKS, tokens=TOKENS)
                        for n in ("f16", "q4kv", "f16-fa"))
    full = {it.id: it.prompt_hash for it in prepare(load_config(ENGINE_CONFIGS / "llamacpp-q4kv.yaml"),
                                                      tmp_path / "unused", None).items}
    asked = prepare(load_config(cand), out, None).items
    assert {"doc_fields/invoice-3-L600/tax", "doc_fields/invoice-3-L600/due_date"} <= {it.id for it in asked}
    assert all(full[it.id] == it.prompt_hash for it in asked), "the test's prompts must be the shipped ones"

    report = tmp_path / "r.json"
    started = time.perf_counter()
    done = run_cli("compare", str(base), str(cand), "--control", str(ctrl), "--no-early-stop", "--out", str(out),
                   "--json", str(report), "--html", str(tmp_path / "r.html"))
    seconds = time.perf_counter() - started
    assert done.returncode == 1, done.stdout + done.stderr
    data = json.loads(report.read_text())
    assert data["control"] == "llamacpp-f16-fa"
    flips = {f["item_id"].split("/", 1)[1]: f for f in data["comparisons"][0]["harmful_flips"]}
    assert flips["invoice-3-L600/tax"]["in_control"] is True, flips
    assert flips["invoice-3-L600/due_date"]["in_control"] is False, flips
    assert "also in the control" in " ".join(data["verdicts"][0]["notes"])
    page = (tmp_path / "r.html").read_text()
    assert "harmful flips beside the control llamacpp-f16-fa" in page
    _assert_none_left(mark)
    print(f"compare --control: 3 runs of {len(asked)} items in {seconds:.0f} s")

    # flips: flag_only on the stored runs: the tax (amount) flip is the control's, only the due date counts
    gate = tmp_path / "flag_only.yaml"
    gate.write_text("flips: flag_only\n")
    dirs = {d.name.rsplit("-", 1)[0]: d for d in out.iterdir()}
    again = run_cli("report", str(dirs["llamacpp-f16"]), str(dirs["llamacpp-q4kv"]), "--control",
                    str(dirs["llamacpp-f16-fa"]), "--gate", str(gate), "--json", str(report))
    assert again.returncode == 1, again.stdout + again.stderr
    rules = {(r["pack"], r["rule"]): r for r in json.loads(report.read_text())["verdicts"][0]["rules"]}
    assert rules[("doc_fields", "max_harmful_flips[amount]")]["measured"] == 0
    assert rules[("doc_fields", "max_harmful_flips[date]")]["measured"] == 1
