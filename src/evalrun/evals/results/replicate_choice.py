"""Which baseline replicates a comparison measures the noise with, so `compare` and a later `report` of the same
runs judge them by the same noise and give the same exit code: `compare` records them (`gated_with`), and
`report` never picks up replicates of another comparison unasked (docs/gate.md, 'Noise, confirmation, ...')."""

from __future__ import annotations

from typing import Callable

from evalrun.evals.files import ConfigError
from evalrun.evals.gate import GateConfig
from evalrun.evals.store import RunStore, run_lock
from evalrun.evals.results._runs import RunResult, stored_replicates


def record(candidate: RunResult, baseline: RunResult, replicates: list[RunResult], confirm: int,
           log: Callable[[str], None] = print) -> None:
    """Write into the candidate's manifest how its comparison with `baseline` was gated."""
    key = baseline.manifest.key
    if key is None:
        return
    entry = {"replicates": [r.dir.name for r in replicates], "confirm": confirm}
    if candidate.manifest.gated_with.get(key) == entry:
        return
    store = RunStore(candidate.dir)
    with run_lock(candidate.dir, log, candidate.name):
        data = store.read_manifest()
        data["gated_with"] = {**(data.get("gated_with") or {}), key: entry}
        store.write_manifest(data)
    candidate.manifest = candidate.manifest.merged({"gated_with": data["gated_with"]})


def with_recorded_confirm(baseline: RunResult, candidates: list[RunResult],
                          gates: list[GateConfig | None]) -> list[GateConfig | None]:
    """Each candidate's stored gate with the `confirm` compare used (its --confirm overrides the gate's)."""
    out = []
    for cand, gate in zip(candidates, gates):
        entry = cand.manifest.gated_with.get(baseline.manifest.key or "")
        n = entry.get("confirm") if entry else None
        recorded = isinstance(n, int) and n >= 0
        out.append((gate or GateConfig()).model_copy(update={"confirm": n}) if recorded else gate)
    return out


def for_report(baseline: RunResult, candidates: list[RunResult], asked: int | None, trust_edited_items: bool,
               log: Callable[[str], None]) -> tuple[list[RunResult], str]:
    """(replicates, why): `asked` (K runs in all) wins; else what the candidates recorded, which must agree."""
    if asked is not None:
        stored = stored_replicates(baseline, trust_edited_items, log)
        if len(stored) < asked - 1:
            raise ConfigError(f"{asked} baseline runs asked for, but {len(stored)} replicate(s) are stored beside "
                              f"{baseline.dir}; run `evalrun compare --replicates {asked}` first", path="--replicates")
        return stored[: asked - 1], f"asked for with --replicates {asked}"
    key = baseline.manifest.key
    records = {c.name: tuple((c.manifest.gated_with.get(key) or {}).get("replicates") or ()) if key else ()
               for c in candidates}
    if len(set(records.values())) > 1:
        said = "; ".join(f"{name}: {', '.join(names) or 'none'}" for name, names in records.items())
        raise ConfigError(f"the candidates were compared with different baseline replicates ({said}); give "
                          "--replicates K to judge them all with the same ones", path="--replicates")
    names = next(iter(records.values()), ())
    out = []
    for name in names:
        d = baseline.dir.with_name(name)
        if not (d / "manifest.json").exists():
            raise ConfigError(f"the comparison was gated with baseline replicate {name}, which is no longer stored "
                              f"beside {baseline.dir}; give --replicates 1 to judge without replicates",
                              file=candidates[0].dir / "manifest.json", path="gated_with")
        out.append(RunResult.load(d, trust_edited_items, log))
    recorded = any(key and key in c.manifest.gated_with for c in candidates)
    return out, ("as compare used them" if names else "as compare gated the candidates") if recorded else \
        "compare recorded none"


def notes(replicates: list[RunResult], origin: str, confirm: int) -> list[str]:
    """The verdict's first notes: the replicates, and the re-asks per flip when there are any."""
    out = [note(replicates, origin)]
    if confirm:
        out.append(f"confirm: {confirm} re-ask(s) per flipped item; a flip counts when the majority reproduce it, "
                   "and a confirmed flip counts without the noise test")
    return out


def note(replicates: list[RunResult], origin: str) -> str:
    """The line every output shows: which replicates measured the noise, and why those."""
    if not replicates:
        return (f"baseline replicates: none ({origin}): the noise is not measured and every harmful flip counts"
                if origin else "baseline replicates: none: the noise is not measured and every harmful flip counts")
    names = ", ".join(r.dir.name for r in replicates)
    return f"baseline replicates: {len(replicates)} ({names}){f', {origin}' if origin else ''}"
