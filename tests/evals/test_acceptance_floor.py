"""Speculative decoding that stops speculating: every candidate whose run used speculative decoding is gated on
the tokens its target emits per verification step (`min_tokens_per_step`, default 1.05): a drafter that accepts
nothing (1.00) is a slower baseline and fails whatever its accuracy. Unit rules first, then the real default model:
a random drafter with the same tokenizer fails the floor, prompt lookup passes it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from evalrun.contract.manifest import AccelEffects
from evalrun.evals.compare import Comparison
from evalrun.evals.files import ConfigError
from evalrun.evals.gate import GateConfig, acceptance_rule, check_acceptance, evaluate, load_gate
from tests.conftest import CONFIGS, ModelRuns, run_cli, write_config, write_tiny_model


def _spec(per_step: float | None, rate: float | None = 0.3) -> dict[str, AccelEffects]:
    return {"speculative": AccelEffects(acceptance_rate=rate, tokens_per_target_forward=per_step)}


def test_the_floor_is_a_default_rule_on_every_speculative_run() -> None:
    [low] = acceptance_rule(GateConfig(), "spec", _spec(1.0, rate=0.0))
    assert (low.rule, low.threshold, low.origin, low.status, low.comparator) == (
        "min_tokens_per_step", 1.05, "default", "fail", ">")
    assert "1.0: nothing accepted" in low.detail
    [at] = acceptance_rule(GateConfig(), "spec", _spec(1.05))
    assert at.status == "fail", "at the floor the candidate is still a slower baseline"
    [ok] = acceptance_rule(GateConfig(), "spec", _spec(1.9))
    assert ok.status == "pass" and ok.measured == 1.9
    assert acceptance_rule(GateConfig(), "plain", {}) == [], "no speculative decoding: no floor"


def test_a_run_that_drafted_nothing_cannot_vouch_for_the_floor() -> None:
    [none] = acceptance_rule(GateConfig(), "spec", _spec(1.0, rate=None))
    assert none.status == "incomplete" and not none.evaluated and math.isnan(none.measured)
    assert "no token was drafted" in none.detail
    [unrecorded] = acceptance_rule(GateConfig(), "old", _spec(None))  # a run that drafted but kept no figure
    assert unrecorded.status == "incomplete" and unrecorded.detail.endswith("none recorded")


def test_one_function_decides_the_rate_and_the_floor() -> None:
    gate = load_gate({"min_acceptance": 0.5, "min_tokens_per_step": 1.5}, "g.yaml")
    rate, floor = acceptance_rule(gate, "spec", _spec(1.4, rate=0.6))
    assert (rate.rule, rate.status, floor.rule, floor.status) == ("min_acceptance", "pass", "min_tokens_per_step", "fail")
    assert floor.origin == "gate" and floor.threshold == 1.5


def test_null_disables_the_floor_and_the_verdict_says_so() -> None:
    gate = load_gate({"min_tokens_per_step": None}, "g.yaml")
    assert acceptance_rule(gate, "spec", _spec(1.0, rate=0.0)) == []
    verdict = evaluate(Comparison("base", "spec", [], [], []), gate)
    assert any(n.startswith("min_tokens_per_step is disabled by the gate (default 1.05)") for n in verdict.notes)
    assert not any("min_tokens_per_step" in n for n in evaluate(Comparison("base", "spec", [], [], []), GateConfig()).notes)


def test_a_floor_below_one_or_set_for_a_candidate_without_speculative_is_exit_2() -> None:
    with pytest.raises(ConfigError) as bad:
        load_gate({"min_tokens_per_step": 0.9}, "g.yaml")
    assert "min_tokens_per_step" in str(bad.value)
    with pytest.raises(ConfigError) as err:
        check_acceptance(load_gate({"min_tokens_per_step": 1.2}, "gate.yaml", ""), "plain", ["kv_cache"])
    assert err.value.exit_code == 2 and err.value.path == "min_tokens_per_step"
    check_acceptance(GateConfig(), "plain", ["kv_cache"])  # the default floor asks nothing of other candidates
    check_acceptance(load_gate({"min_tokens_per_step": None}, "g.yaml"), "plain", [])


@pytest.mark.model
@pytest.mark.slow
def test_a_drafter_that_accepts_nothing_fails_the_floor_and_prompt_lookup_passes(
        tmp_path: Path, model_runs: ModelRuns, smol_dir: str) -> None:
    """The default model with a randomly initialised two-layer drafter sharing its tokenizer: every draft is
    rejected, so each verification step emits the target's own token only (1.00): FAIL (exit 1) on the floor,
    although the outputs are the target's. Prompt lookup on the same items passes it."""
    runs = tmp_path / "runs"
    model_runs.copy(runs, CONFIGS / "baseline.yaml", limit=1)  # the session's shared --limit 1 baseline
    drafter = write_tiny_model(tmp_path / "random-drafter", smol_dir)
    random = write_config(tmp_path / "specdec-random.yaml", f"""
        extends: {CONFIGS / 'baseline.yaml'}
        name: specdec-random
        acceleration:
          speculative: {{method: draft_model, draft: {drafter}, num_tokens: 5}}
        """)
    out = tmp_path / "out.json"
    res = run_cli("compare", str(CONFIGS / "baseline.yaml"), str(random), str(CONFIGS / "specdec-pld.yaml"),
                  "--limit", "1", "--out", str(runs), "--json", str(out))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "specdec-random: FAIL" in res.stdout and "min_tokens_per_step" in res.stdout
    data = json.loads(out.read_text())
    floor = [next(r for r in v["rules"] if r["rule"] == "min_tokens_per_step") for v in data["verdicts"]]
    assert [(r["status"], r["origin"], r["comparator"]) for r in floor] == [
        ("fail", "default", ">"), ("pass", "default", ">")], floor
    assert floor[0]["measured"] == 1.0 and floor[1]["measured"] > 1.5
    effects = {json.loads(p.read_text())["name"]: json.loads(p.read_text())["effects"]
               for p in runs.glob("specdec-*/manifest.json")}
    assert effects["specdec-random"]["speculative"]["accepted_tokens"] == 0
    assert effects["specdec-random"]["speculative"]["drafted_tokens"] > 0
