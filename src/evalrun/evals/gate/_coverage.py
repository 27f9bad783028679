"""What a comparison could not pair, judged against the baseline's plan, stated as gaps naming the run directory.

`plan_gaps` (the runs asked different things) may be accepted with `--subset`; `coverage_gaps` (no readable
generation, or a baseline that raised) are never waived (docs/commands.md, 'Coverage: the verdict fails closed')."""

from __future__ import annotations

from collections import defaultdict
from typing import Protocol

from evalrun.contract.types import Generation, Item
from evalrun.evals.gate._verdict import ALL_PACKS, Gap

FIRST_ERROR_CHARS = 200


class StoredRun(Protocol):
    """What the coverage checks read of a run (read-only, so a run with a narrower `dir` fits)."""

    @property
    def name(self) -> str: ...
    @property
    def dir(self) -> object: ...
    @property
    def items(self) -> list[Item]: ...
    @property
    def generations(self) -> dict[str, Generation]: ...


def _warnings(run: StoredRun) -> str:
    warnings = list(getattr(run, "warnings", None) or [])
    return f"; {len(warnings)} unreadable line(s) skipped, first: {warnings[0]}" if warnings else ""


def _by_pack(items: list[Item]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for it in items:
        out[it.pack].append(it.id)
    return out


def _cut(run: StoredRun, held: int) -> int | None:
    """The run's `--limit N` when it may have cut this pack (the pack holds N items or more)."""
    limit: int | None = getattr(run, "limit", None)
    return limit if limit is not None and held >= limit else None


def _stored_with(run: StoredRun, role: str, limit: int) -> str:
    return f"{role} {run.dir} was stored with --limit {limit} (the first {limit} item(s) of each pack)"


def plan_gaps(baseline: StoredRun, candidate: StoredRun) -> list[Gap]:
    """One gap per pack where the two runs asked different items (other parameters, or a run cut by --limit)."""
    base_packs, cand_packs = _by_pack(baseline.items), _by_pack(candidate.items)
    cand = f"{candidate.name} ({candidate.dir})"
    gaps: list[Gap] = []
    for pack in sorted(set(base_packs) | set(cand_packs)):
        base_ids, cand_ids = base_packs.get(pack, []), cand_packs.get(pack, [])
        base_set, cand_set = set(base_ids), set(cand_ids)
        dropped = [i for i in base_ids if i not in cand_set]
        not_asked = [i for i in cand_ids if i not in base_set]
        base_cut, cand_cut = _cut(baseline, len(base_ids)), _cut(candidate, len(cand_ids))
        causes: list[str] = []
        if not cand_ids:
            causes.append(f"{cand} does not ask this pack at all")
        elif dropped and cand_cut is not None:
            causes.append(f"{_stored_with(candidate, candidate.name, cand_cut)}: it lacks {len(dropped)} "
                          f"(e.g. {dropped[0]})")
        elif dropped:
            causes.append(f"{cand} does not ask {len(dropped)} (e.g. {dropped[0]}): its config asks fewer "
                          "(narrower pack parameters)")
        if not_asked and base_cut is not None:
            causes.append(f"{_stored_with(baseline, 'baseline', base_cut)}: it was never asked {len(not_asked)} "
                          f"(e.g. {not_asked[0]})")
        elif not_asked:
            causes.append(f"baseline {baseline.dir} was never asked {len(not_asked)} "
                          f"(e.g. {not_asked[0]}): the runs used different pack parameters")
        # a limit both runs share cuts nothing the other asked: still not the configs' whole plan
        if base_cut is not None and not not_asked:
            causes.append(f"{_stored_with(baseline, 'baseline', base_cut)}: its config asks more")
        if cand_cut is not None and not dropped:
            causes.append(f"{_stored_with(candidate, candidate.name, cand_cut)}: its config asks more")
        if causes:
            counts = [f"{len(base_set & cand_set)} item(s) asked by both runs",
                      *([f"{len(dropped)} by the baseline alone"] if dropped else []),
                      *([f"{len(not_asked)} by {candidate.name} alone"] if not_asked else [])]
            gaps.append(Gap(pack, f"{pack}: {', '.join(counts)}: " + "; ".join(causes),
                            len(dropped) + len(not_asked)))
    return gaps


def subset_text(scope: list[Gap]) -> str:
    """What a --subset verdict leaves out of the baseline's plan, in one line for every output."""
    return ("SUBSET (--subset): judged only on the items both runs asked; left out: "
            + "; ".join(g.reason for g in scope))


def coverage_gaps(baseline: StoredRun, candidate: StoredRun) -> list[Gap]:
    """One gap per pack, over the items both runs asked: unanswered on either side, or a baseline that raised."""
    if not candidate.items:
        return [Gap(ALL_PACKS, f"{candidate.name}: {candidate.dir} asks no items (items.jsonl empty or missing)")]
    base_asked = {it.id for it in baseline.items}
    gaps: list[Gap] = []
    for pack, all_ids in sorted(_by_pack(candidate.items).items()):
        ids = [i for i in all_ids if i in base_asked]
        if not ids:
            continue  # nothing both runs asked: plan_gaps says so
        no_cand = [i for i in ids if i not in candidate.generations]
        no_base = [i for i in ids if i not in baseline.generations]
        raised = [i for i in ids if i in baseline.generations and baseline.generations[i].error is not None]
        causes = []
        if no_cand and getattr(getattr(candidate, "manifest", None), "status", None) == "stopped":
            causes.append(f"{len(no_cand)} not generated: {candidate.name} stopped early once its "
                          "FAIL was decided (--no-early-stop generates them)")
        elif no_cand:
            causes.append(f"{candidate.dir} has no readable generation for {len(no_cand)} "
                          f"(e.g. {no_cand[0]}){_warnings(candidate)}")
        if no_base:
            causes.append(f"baseline {baseline.dir} has no readable generation for {len(no_base)} "
                          f"(e.g. {no_base[0]}){_warnings(baseline)}")
        if raised:
            first = (baseline.generations[raised[0]].error or "")[:FIRST_ERROR_CHARS]
            causes.append(f"baseline {baseline.dir} raised on {len(raised)} (e.g. {raised[0]}: {first}): "
                          "it cannot vouch for the candidate's answers there")
        if not causes:
            continue
        bad = set(no_cand) | set(no_base) | set(raised)
        paired = len(ids) - len(bad)
        head = f"{pack}: {paired} of {len(ids)} items paired"
        if paired == 0:
            head += " (nothing in this pack could be compared)"
        gaps.append(Gap(pack, f"{head}: " + "; ".join(causes), len(bad)))
    return gaps
