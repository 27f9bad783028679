"""What a comparison could not pair, stated as gaps in the verdict.

The candidate's items are what it asked for. Each one must have a readable
generation in both runs, or the verdict cannot vouch for it: a baseline whose
samples are empty, deleted or unreadable pairs nothing, and that is never a
pass (evals.verdict). Every gap names the run directory it is about.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Protocol

from evalrun.contract.types import Generation, Item
from evalrun.evals.verdict import ALL_PACKS, Gap


class StoredRun(Protocol):
    name: str
    dir: object
    items: list[Item]
    generations: dict[str, Generation]


def _warnings(run: StoredRun) -> str:
    """Unreadable lines the store skipped while reading this run, if it reported any."""
    warnings = list(getattr(run, "warnings", None) or [])
    return f"; {len(warnings)} unreadable line(s) skipped, first: {warnings[0]}" if warnings else ""


def _stopped(run: StoredRun) -> bool:
    manifest = getattr(run, "manifest", None)
    return getattr(manifest, "status", None) == "stopped"


def coverage_gaps(baseline: StoredRun, candidate: StoredRun) -> list[Gap]:
    """One gap per pack and cause: candidate items unanswered, or without a baseline answer."""
    if not candidate.items:
        return [Gap(ALL_PACKS, f"{candidate.name}: {candidate.dir} asks no items (items.jsonl empty or missing)")]
    base_asked = {it.id for it in baseline.items}
    by_pack: dict[str, list[str]] = defaultdict(list)
    for it in candidate.items:
        by_pack[it.pack].append(it.id)
    gaps: list[Gap] = []
    for pack, ids in sorted(by_pack.items()):
        no_cand = [i for i in ids if i not in candidate.generations]
        not_asked = [i for i in ids if i not in base_asked]
        no_base = [i for i in ids if i in base_asked and i not in baseline.generations]
        causes = []
        if no_cand and _stopped(candidate):
            causes.append((len(no_cand), f"{len(no_cand)} not generated: {candidate.name} stopped early once its "
                                         "FAIL was decided (--no-early-stop generates them)"))
        elif no_cand:
            causes.append((len(no_cand), f"{candidate.dir} has no readable generation for {len(no_cand)} "
                                         f"(e.g. {no_cand[0]}){_warnings(candidate)}"))
        if no_base:
            causes.append((len(no_base), f"baseline {baseline.dir} has no readable generation for {len(no_base)} "
                                         f"(e.g. {no_base[0]}){_warnings(baseline)}"))
        if not_asked:
            causes.append((len(not_asked), f"baseline {baseline.dir} was never asked {len(not_asked)} "
                                           f"(e.g. {not_asked[0]}): the runs used different pack parameters"))
        if not causes:
            continue
        paired = sum(1 for i in ids if i in candidate.generations and i in baseline.generations)
        head = f"{pack}: {paired} of {len(ids)} items paired"
        if paired == 0:
            head += " (nothing in this pack could be compared)"
        gaps.append(Gap(pack, f"{head}: " + "; ".join(text for _, text in causes), len(ids) - paired))
    return gaps
