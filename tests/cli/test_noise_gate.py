"""The noisy setting, for real: the default model in bfloat16 on the CPU answers some items
differently when they land in other batches (padding and neighbours change the bf16
reductions), as GPU serving does. Nothing here edits an output: the A/A repeats are the
same configuration generated again in shuffled batches."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrun.evals import api
from evalrun.evals.store import RunStore
from tests.conftest import CONFIGS

pytestmark = pytest.mark.model

NOISY = CONFIGS / "noisy-bf16.yaml"


@pytest.fixture(scope="module")
def aa(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, api.CompareReport]:
    out = tmp_path_factory.mktemp("noisy")
    cfg = api.load(NOISY)
    report = api.compare(cfg, [cfg, cfg], out=out, replicates=3, early_stop=False, log=lambda m: None)
    return out, report


def test_the_noise_is_real_and_fails_the_single_run_gate(aa: tuple[Path, api.CompareReport]) -> None:
    _, report = aa
    # the repeats are not byte-identical to the baseline: the batches changed the answers
    assert any(pc.identical_outputs < pc.n for c in report.comparisons for pc in c.packs)
    assert report.stability is not None and report.stability.unstable
    single = api.compare_results(report.baseline, [(c, None) for c in report.candidates])
    assert any(v.status == "fail" for v in single.verdicts), [v.summary() for v in single.verdicts]


def test_the_noise_aware_gate_passes_the_same_repeats(aa: tuple[Path, api.CompareReport]) -> None:
    _, report = aa
    assert all(v.status != "fail" for v in report.verdicts), [(v.summary(), v.notes) for v in report.verdicts]
    for v in report.verdicts:
        assert any("3 baseline replicates" in n for n in v.notes)
        flips = [r for r in v.rules if r.rule.startswith("max_harmful_flips")]
        assert flips and all(r.p_value is not None and r.aa_trials for r in flips)
    # every flip of a repeat is either on a field unstable at baseline (noise) or tested against the A/A rate
    for comp, v in zip(report.comparisons, report.verdicts):
        noise = {f.key for f in v.noise_flips}
        assert noise <= {f.key for f in comp.harmful}


def test_report_finds_the_stored_replicates(aa: tuple[Path, api.CompareReport]) -> None:
    _, report = aa
    again = api.report([report.baseline.dir, report.candidates[0].dir], log=lambda m: None)
    assert len(again.replicates) == 2 and again.verdicts[0].status == report.verdicts[0].status
    assert again.verdicts[0].noise_flips == report.verdicts[0].noise_flips
    from evalrun.reports.summary import report_json
    from evalrun.reports.view import build_view

    data = report_json(build_view(again, html=False))
    assert data["stability"]["replicates"] == 3 and data["stability"]["unstable_fields"]
    rules = data["verdicts"][0]["rules"]
    assert all("p_value" in r and "aa_trials" in r for r in rules if r["rule"].startswith("max_harmful_flips"))
    assert data["verdicts"][0]["power"]  # each pack's detectable rate


def test_confirmation_discards_flips_that_do_not_reproduce(aa: tuple[Path, api.CompareReport]) -> None:
    out, report = aa
    samples = {r.name: RunStore(r.dir).samples_path.read_bytes() for r in report.candidates}
    cfg = api.load(NOISY)
    confirmed = api.compare(cfg, [cfg, cfg], out=out, replicates=3, early_stop=False, confirm_n=3,
                            log=lambda m: None)
    asked = set()
    for run, comp, v in zip(confirmed.candidates, confirmed.comparisons, confirmed.verdicts):
        assert RunStore(run.dir).samples_path.read_bytes() == samples[run.name]  # re-asks never touch samples
        reasks = RunStore(run.dir).read_confirmations()
        assert set(reasks) <= {f.item_id for f in comp.harmful}  # only flipped items are re-asked
        assert all(sorted(r.attempt for r in rs) == [1, 2, 3] for rs in reasks.values())
        assert all(rs[0].batch_size == 1 for rs in reasks.values())  # batch 1 first
        asked |= set(reasks)
        for f in comp.harmful:
            if f.confirmations is not None:
                assert (f in v.unconfirmed) == (not f.confirmed)
        assert v.status != "fail"
    refuted = [f for v in confirmed.verdicts for f in v.unconfirmed]
    assert asked and refuted, "a noise flip should not reproduce in the majority of re-asks in other batches"
    assert all(f.confirmations[0] * 2 <= f.confirmations[1] for f in refuted)
