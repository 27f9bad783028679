"""Coverage against the baseline's plan (src/evalrun/evals/gate/_coverage.py): a candidate that asks less than the
baseline (a dropped pack, narrower parameters, a --limit run on either side), a baseline whose
generation raised, and a pack no rule applies to are INCOMPLETE, never a pass; --subset judges
the shared items and says SUBSET. Synthetic runs (tests/conftest.py): no model."""

from __future__ import annotations

from dataclasses import replace

from evalrun.evals import api
from evalrun.evals.gate import NO_RULE, SUBSET_TEXT, load_gate
from evalrun.evals.results import RunResult
from tests.conftest import DEPTHS, LENGTHS, doc_items, make_run, needle_items

ITEMS = needle_items() + doc_items()
NEEDLES = [it for it in ITEMS if it.pack == "needle"]
DOCS = [it for it in ITEMS if it.pack == "docs"]
# every needle (length, depth, i) key of make_run
KEYS = [(length, depth, i) for length in LENGTHS for depth in DEPTHS for i in range(2)]


def _only(run: RunResult, items: list) -> RunResult:
    """The run as a config asking only `items` would have stored it."""
    ids = {it.id for it in items}
    return replace(run, items=[it for it in run.items if it.id in ids],
                   generations={k: g for k, g in run.generations.items() if k in ids})


def _raised(run: RunResult, ids: list[str], message: str) -> RunResult:
    gens = dict(run.generations)
    for i in ids:
        gens[i] = gens[i].model_copy(update={"output": None, "output_ids": None, "error": message})
    return replace(run, generations=gens)


def test_a_dropped_pack_is_incomplete_naming_the_pack_and_its_items() -> None:
    """The candidate would lose every document amount; its config drops that pack. Was exit 0."""
    base = make_run("baseline", ITEMS, set())
    cand = _only(make_run("int4kv", ITEMS, {"docs"}), NEEDLES)
    report = api.compare_results(base, [(cand, None)])
    [verdict] = report.verdicts
    assert verdict.status == "incomplete" and report.exit_code == 4
    [gap] = verdict.pack_gaps("docs")
    assert gap.items == 3
    assert "docs: 0 item(s) asked by both runs, 3 by the baseline alone" in gap.reason
    assert "does not ask this pack at all" in gap.reason and str(cand.dir) in gap.reason


def test_narrower_pack_parameters_are_incomplete() -> None:
    base = make_run("baseline", ITEMS, set())
    cand = _only(make_run("int4kv", ITEMS, set(KEYS[6:])), NEEDLES[:6] + DOCS)  # loses what it no longer asks
    report = api.compare_results(base, [(cand, None)])
    [verdict] = report.verdicts
    assert verdict.status == "incomplete"
    [gap] = verdict.gaps
    assert gap.pack == "needle" and gap.items == 6
    assert "6 by the baseline alone" in gap.reason and "narrower pack parameters" in gap.reason


def test_subset_judges_the_shared_items_and_says_so() -> None:
    base = make_run("baseline", ITEMS, set())
    cand = _only(make_run("int4kv", ITEMS, {"docs"}), NEEDLES)
    report = api.compare_results(base, [(cand, None)], subset=True)
    [verdict] = report.verdicts
    assert verdict.status == "pass" and report.exit_code == 0 and verdict.gaps == []
    assert verdict.subset is not None and "docs: 0 item(s) asked by both runs" in verdict.subset
    assert verdict.notes[0] == verdict.subset
    assert verdict.summary().startswith(SUBSET_TEXT) and verdict.rule_counts()["subset"] == 1
    # a regression on the shared items still fails
    worse = _only(make_run("int2kv", ITEMS, {KEYS[0]}), NEEDLES)
    assert api.compare_results(base, [(worse, None)], subset=True).exit_code == 1
    # nothing left out: not a subset, whatever the flag
    same = make_run("fp8kv", ITEMS, set())
    [full] = api.compare_results(base, [(same, None)], subset=True).verdicts
    assert full.status == "pass" and full.subset is None and SUBSET_TEXT not in full.summary()
    assert "subset" not in full.rule_counts()


def test_a_limited_candidate_is_incomplete_naming_the_limit_and_what_is_missing() -> None:
    """`run --limit 1` stored the candidate's first item per pack; the rest it would lose. Was exit 0."""
    base = make_run("baseline", ITEMS, set())
    cand = replace(_only(make_run("int4kv", ITEMS, set(KEYS[1:])), [NEEDLES[0], DOCS[0]]), limit=1)
    [verdict] = api.compare_results(base, [(cand, None)]).verdicts
    assert verdict.status == "incomplete"
    by_pack = {g.pack: g for g in verdict.gaps}
    assert set(by_pack) == {"needle", "docs"} and by_pack["needle"].items == 11 and by_pack["docs"].items == 2
    assert "was stored with --limit 1" in by_pack["needle"].reason and "it lacks 11" in by_pack["needle"].reason
    [subset] = api.compare_results(base, [(cand, None)], subset=True).verdicts
    assert subset.status == "pass" and "--limit 1" in (subset.subset or "")


def test_limited_runs_on_both_sides_are_incomplete_though_every_item_pairs() -> None:
    """`compare --limit 2`: both runs hold the same first items, the configs ask more."""
    first = [*NEEDLES[:2], *DOCS[:2]]
    base = replace(_only(make_run("baseline", ITEMS, set()), first), limit=2)
    cand = replace(_only(make_run("int4kv", ITEMS, set()), first), limit=2)
    [verdict] = api.compare_results(base, [(cand, None)]).verdicts
    assert verdict.status == "incomplete" and {g.pack for g in verdict.gaps} == {"needle", "docs"}
    assert all("baseline /runs/baseline was stored with --limit 2" in g.reason and "its config asks more" in g.reason
               and "int4kv /runs/int4kv was stored with --limit 2" in g.reason for g in verdict.gaps)
    # a limit above a pack's size cut nothing there
    roomy = [replace(make_run(n, ITEMS, set()), limit=20) for n in ("baseline", "int4kv")]
    [whole] = api.compare_results(roomy[0], [(roomy[1], None)]).verdicts
    assert whole.status == "pass", whole.gaps


def test_baseline_errors_are_gaps_with_their_count_and_first_message() -> None:
    """A baseline that ran out of memory on 10 of 12 needles cannot vouch for a candidate wrong on
    exactly those 10. Was exit 0 with no note."""
    lost = KEYS[2:]
    victims = [it.id for it in NEEDLES
               if (it.meta.target_tokens, it.meta.depth, int(it.id[-1])) in lost]
    assert len(victims) == 10
    oom = "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    base = _raised(make_run("baseline", ITEMS, set()), victims, oom)
    cand = make_run("int4kv", ITEMS, set(lost))
    report = api.compare_results(base, [(cand, None)])
    [verdict] = report.verdicts
    assert verdict.status == "incomplete" and report.exit_code == 4
    [gap] = verdict.gaps
    assert gap.pack == "needle" and gap.items == 10
    assert "needle: 2 of 12 items paired" in gap.reason and "raised on 10" in gap.reason and oom in gap.reason
    assert str(base.dir) in gap.reason
    # a regression found elsewhere outranks the gap (the verdict's ordering)
    worse = make_run("int2kv", ITEMS, set(lost) | {"docs"})
    assert api.compare_results(base, [(worse, None)]).exit_code == 1


def test_a_pack_no_rule_applies_to_is_incomplete() -> None:
    """A gate disabling every rule of `docs` (a candidate losing every document answer): its row
    said INCOMPLETE while the verdict passed. Now the verdict and the row agree."""
    gate = load_gate({"packs": {"*": {"max_drop": 0}, "docs": {"max_drop": None}},
                      "max_harmful_flips": {"amount": None, "number": None}})
    base = make_run("baseline", ITEMS, set())
    cand = make_run("int4kv", ITEMS, {"docs"})
    report = api.compare_results(base, [(cand, None)], gate)
    [verdict] = report.verdicts
    assert not [r for r in verdict.rules if r.pack == "docs"]
    assert verdict.status == "incomplete" and report.exit_code == 4
    assert [g.reason for g in verdict.gaps] == [NO_RULE] and verdict.gaps[0].pack == "docs"
    assert verdict.pack_status("docs") == "incomplete" and verdict.pack_status("needle") == "pass"
    # with a rule for docs again, the comparison is judged (and fails on the lost total)
    gate_back = load_gate({"packs": {"*": {"max_drop": 0}}, "max_harmful_flips": {"amount": None, "number": None}})
    assert api.compare_results(base, [(cand, None)], gate_back).exit_code == 1
