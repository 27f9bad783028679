"""The control arm (`compare --control`): a third run paired with the baseline, never gated, that
attributes each harmful flip of a candidate: "also in control" (the control lost that field on that
item too: the kernel, the engine, the noise) or "flag only". The gate's `flips: flag_only` counts only
the latter. Stored runs here (tests/conftest.py make_run); the llama.cpp figure is
tests/runners/test_control_llamacpp.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalrun.contract import Generation
from evalrun.evals import api
from evalrun.evals.files import ConfigError
from evalrun.evals.gate import GateConfig, PackRule, load_gate
from evalrun.evals.run import confirm
from evalrun.evals.scoring import score_run, stability
from evalrun.reports.formats import render_markdown
from evalrun.reports.formats._summary import report_json
from evalrun.reports.formats.html import render_html_text
from evalrun.reports.view import build_view
from tests.conftest import HOSTILE_OUTPUT, make_run, needle_items, run_cli, write_runs
from tests.evals.fake_runs import GoldRunner, gold_run
from tests.fakes.openai_server import ExactBackend, OpenAITestServer, gold_answers, items_of, served_config

SHARED = {(512, 0.0, 1)}  # lost by the control and the candidate: not the flag's
OWN = {(1024, 0.5, 0), (1024, 1.0, 1)}  # lost by the candidate alone
FLAG_ONLY = GateConfig(flips="flag_only")


def _report(gate: GateConfig | None = None, control: bool = True, hostile: bool = False) -> api.CompareReport:
    items = needle_items()
    base = make_run("baseline", items, set())
    cand = make_run("q4kv", items, SHARED | OWN)
    ctrl = make_run("f16fa", items, SHARED | {(512, 1.0, 0)})  # and one the candidate kept: no flip of its own
    if hostile:  # the control's answer to the shared flip is model output like any other
        shared = ctrl.generations["needle/L512-D0.00-1"]
        ctrl.generations[shared.item_id] = shared.model_copy(update={"output": HOSTILE_OUTPUT, "output_ids": None})
    return api.compare_results(base, [(cand, gate)], control=ctrl if control else None)


def test_each_harmful_flip_says_whether_the_control_lost_it_too() -> None:
    report = _report()
    flips = {f.item_id: f for f in report.candidates[0].comparison.harmful}
    assert {i: f.in_control for i, f in flips.items()} == {
        "needle/L512-D0.00-1": True, "needle/L1024-D0.50-0": False, "needle/L1024-D1.00-1": False}
    shared, own = flips["needle/L512-D0.00-1"], flips["needle/L1024-D0.50-0"]
    assert shared.control_value == shared.candidate_value != shared.baseline_value  # the same wrong answer
    assert own.control_value == own.baseline_value != own.candidate_value  # the control kept it
    # the control is paired with the baseline, shown, and never gated
    assert report.control is not None and report.control.name == "f16fa" and len(report.verdicts) == 1
    # the default counts every flip and says how many the control explains
    verdict = report.verdicts[0]
    [rule] = [r for r in verdict.rules if r.rule == "max_harmful_flips[number]"]
    assert rule.measured == 3 and rule.status == "fail"
    assert "3 harmful flip(s), 1 also in the control (counted: flips: all; flag_only counts the flag's own)" \
        in verdict.notes


def test_without_a_control_no_flip_is_attributed() -> None:
    report = _report(control=False)
    assert report.control is None
    assert all(f.in_control is None and f.control_value is None for f in report.candidates[0].comparison.harmful)
    assert not any("also in the control" in n for n in report.verdicts[0].notes)


def test_flag_only_counts_only_the_flips_the_control_does_not_share() -> None:
    verdict = _report(FLAG_ONLY).verdicts[0]
    [rule] = [r for r in verdict.rules if r.rule == "max_harmful_flips[number]"]
    assert rule.measured == 2 and rule.status == "fail"
    assert "1 flip(s) also in the control not counted (flips: flag_only)" in rule.detail
    assert "3 harmful flip(s), 1 also in the control (not counted by the flip rules: flips: flag_only)" \
        in verdict.notes
    # a candidate whose every flip the control shares passes the flip rules under flag_only, not under all
    items = needle_items()
    base, cand, ctrl = (make_run(n, items, w) for n, w in (("baseline", set()), ("q4kv", SHARED), ("f16fa", SHARED)))
    for gate, status in ((FLAG_ONLY, "pass"), (None, "fail")):  # max_drop still judges the lost item as ever
        verdict = api.compare_results(base, [(cand, gate)], control=ctrl).verdicts[0]
        rules = {r.rule: r.status for r in verdict.rules}
        assert (rules["max_drop"], rules["max_harmful_flips[number]"]) == ("fail", status)


def test_flag_only_leaves_the_shared_flips_out_of_the_unstable_fields_rate_test() -> None:
    """With replicates, fields right in only some of them face a stratified rate test; a flip the control shares
    is not the flag's there either."""
    items = needle_items()
    every = {(int(it.meta.target_tokens or 0), it.meta.depth, int(it.id[-1])) for it in items}
    base, cand, ctrl = (make_run(n, items, w) for n, w in (("baseline", set()), ("q4kv", every), ("f16fa", every)))
    rep = make_run("baseline", items, every)
    rep.dir = rep.dir.with_name("baseline-replicate")
    details = {}
    for flips in ("all", "flag_only"):
        gate = GateConfig(flips=flips, packs={"*": PackRule(max_drop=None)})
        verdict = api.compare_results(base, [(cand, gate)], replicates=[rep], control=ctrl).verdicts[0]
        [details[flips]] = [r.detail for r in verdict.rules if r.rule == "max_harmful_flips[number]"]
    assert "stratified test" in details["all"] and "stratified test" not in details["flag_only"]
    assert "12 flip(s) also in the control not counted" in details["flag_only"]


def test_flag_only_without_a_control_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    gate = load_gate({"flips": "flag_only"}, tmp_path / "gate.yaml")
    with pytest.raises(ConfigError) as err:
        _report(gate, control=False)
    assert err.value.path == "gate.flips" and str(tmp_path / "gate.yaml") in str(err.value)
    with pytest.raises(ConfigError):
        load_gate({"flips": "some"}, tmp_path / "gate.yaml")  # all | flag_only


def test_json_markdown_and_terminal_words_carry_the_attribution() -> None:
    view = build_view(_report(), html=False)
    data = json.loads(json.dumps(report_json(view)))
    assert data["control"] == "f16fa"
    flips = {f["item_id"]: f for f in data["comparisons"][0]["harmful_flips"]}
    assert flips["needle/L512-D0.00-1"]["in_control"] is True
    assert flips["needle/L1024-D0.50-0"]["in_control"] is False
    assert flips["needle/L1024-D0.50-0"]["control_value"] == flips["needle/L1024-D0.50-0"]["baseline_value"]
    md = render_markdown(view)
    assert "| needle/L512-D0.00-1 | value |" in md and "also in control" in md and "flag only" in md


def test_the_html_report_shows_the_three_answers_side_by_side_escaped() -> None:
    page = render_html_text(build_view(_report(hostile=True)))
    assert "harmful flips beside the control f16fa" in page
    assert "<th scope=\"col\">f16fa (control)</th>" in page and "<th scope=\"col\">baseline (baseline)</th>" in page
    row = page[page.index("<code>needle/L512-D0.00-1</code>", page.index("beside the control")):]
    row = row[:row.index("</tr>")]
    assert row.count('<td class="val">') == 4 and "also in control" in row
    assert "&lt;script&gt;window.pwned" in row and "<script>window.pwned" not in page


def test_report_control_on_stored_runs_and_the_exit_2_without_one(tmp_path: Path) -> None:
    items = needle_items()
    runs = [make_run(n, items, w) for n, w in (("baseline", set()), ("q4kv", SHARED | OWN), ("f16fa", SHARED))]
    base, cand, ctrl = write_runs(tmp_path / "runs", api.compare_results(runs[0], [(r, None) for r in runs[1:]]))
    gate = tmp_path / "gate.yaml"
    gate.write_text("flips: flag_only\n")
    done = run_cli("report", str(base), str(cand), "--control", str(ctrl), "--gate", str(gate),
                   "--json", str(tmp_path / "r.json"))
    assert done.returncode == 1, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert "Control: f16fa (not gated)" in out and "(also in control)" in out and "(flag only)" in out
    rules = {r["rule"]: r for r in json.loads((tmp_path / "r.json").read_text())["verdicts"][0]["rules"]}
    assert rules["max_harmful_flips[number]"]["measured"] == 2
    missing = run_cli("report", str(base), str(cand), "--gate", str(gate))
    assert missing.returncode == 2 and "gate.yaml: flips: flips: flag_only counts only" in " ".join(
        missing.stderr.split()), missing.stderr


class _Wrong(GoldRunner):
    """Answers `wrong` items with a number that is not theirs, the rest with their gold."""

    def __init__(self, wrong: set[str]) -> None:
        super().__init__()
        self.wrong = wrong

    def run(self, request, emit) -> None:  # type: ignore[no-untyped-def]
        for item in request.items:
            answer = "It is 1." if item.id in self.wrong else f"It is {item.fields[0].gold}."
            emit(Generation(item_id=item.id, pack=item.pack, prompt_hash=item.prompt_hash, output=answer,
                            new_tokens=3, seconds=0.01, batch_size=1, prompt_tokens=100))


@pytest.mark.parametrize(("flips", "generated"), [("all", 1), ("flag_only", 12)])
def test_the_early_stop_does_not_count_a_flip_the_control_shares(tmp_path: Path, flips: str, generated: int) -> None:
    """Under flag_only the control's losses are known before the candidate runs: its first item, lost by
    the control too, decides nothing, and the candidate (no flip of its own) runs to the end."""
    items = needle_items()[:12]
    base = score_run(items, {it.id: Generation(item_id=it.id, pack=it.pack, prompt_hash=it.prompt_hash,
                                               output=f"It is {it.fields[0].gold}.") for it in items})
    prepared = gold_run(tmp_path, _Wrong({items[0].id}), n=12)
    explained = frozenset({(items[0].id, "value")})
    result = confirm.run_candidate(prepared, base, stability([base]), GateConfig(flips=flips), True, None,
                                   lambda _: None, False, explained)
    assert len(result.generations) == generated
    assert result.manifest.status == ("stopped" if flips == "all" else "complete")


@pytest.mark.slow
def test_compare_runs_the_control_first_and_flag_only_lets_the_candidate_finish(tmp_path: Path) -> None:
    """End to end on deterministic servers: the control and the candidate both lose the depth-0 needles. Counting
    all flips the candidate stops at its first; under flag_only the control (generated first, in full) explains
    them, so the candidate runs every item and its flip rules pass."""
    needles = {"pack": "needle_numbers", "lengths": [256, 384], "depths": [0.0, 0.5, 1.0], "values": ["integer"]}
    items = items_of([needles])
    with OpenAITestServer(ExactBackend(gold_answers(items))) as exact, \
            OpenAITestServer(ExactBackend(gold_answers(items, lambda it: it.meta.depth == 0.0))) as lossy:
        for flips, code, status in (("all", 1, "stopped"), ("flag_only", 0, "complete")):
            out, gate = tmp_path / flips, {"packs": {"*": {"max_drop": None}}, "flips": flips}
            out.mkdir()
            base = served_config(out / "base.yaml", "base", exact.base_url, [needles])
            cand = served_config(out / "cand.yaml", "cand", lossy.base_url, [needles], gate=gate)
            ctrl = served_config(out / "ctrl.yaml", "ctrl", lossy.base_url, [needles])
            done = run_cli("compare", str(base), str(cand), "--control", str(ctrl), "--out", str(out / "runs"),
                           "--json", str(out / "r.json"))
            assert done.returncode == code, done.stdout + done.stderr
            log = " ".join(done.stderr.split())
            assert log.index("ctrl:") < log.index("cand:"), "the control is generated before the candidate"
            runs = {d.name.split("-")[0]: json.loads((d / "manifest.json").read_text()) for d in (out / "runs").iterdir()}
            assert runs["ctrl"]["status"] == "complete" and runs["cand"]["status"] == status
        flipped = json.loads((out / "r.json").read_text())["comparisons"][0]["harmful_flips"]
        assert len(flipped) == 2 and all(f["in_control"] for f in flipped)
