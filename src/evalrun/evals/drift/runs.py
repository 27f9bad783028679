"""Drift for a comparison's stored runs: the baseline's distributions, each run's teacher-forced records
against them, the figures (_drift.py), and the baseline's answer tokens as text for the item browser's
per-token KL strip (docs/drift.md). A token's piece is what it adds to the decoding of the WINDOW tokens
before it: decoded alone it would lose a leading space (SentencePiece).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from evalrun.evals.store import dists as dists_store
from evalrun.evals.drift import teacher_force
from evalrun.evals.drift._drift import Drift, compute, effective_length
from evalrun.evals.compare import Comparison
from evalrun.evals.results import PreparedRun, RunResult
from evalrun.runners.logprobs import ForcedDists, TokenDists
from evalrun.runners.models import ModelSource, load_tokenizer

NO_LOGPROBS = "no logprobs stored with the baseline: drift not measured"
NOT_MEASURED = "drift not measured (compare --drift teacher-forces each candidate on the baseline's answers)"
WINDOW = 4  # tokens decoded before each one
_KINDS = frozenset({"gguf", "dir", "hub"})
_PARTIAL = "\ufffd"


@dataclass
class Forced:
    """What teacher forcing did now, by run directory: the seconds it took, and why a run has no records."""

    seconds: dict[Path, float] = field(default_factory=dict)
    reasons: dict[Path, str] = field(default_factory=dict)


class Watch:
    """The baseline's records, read once, for the runs that generate after it, and what recording
    their answers equal to the baseline's cost, by run directory (teacher_force.watched)."""

    def __init__(self, baseline: RunResult, log: Callable[[str], None]):
        self.baseline = baseline
        self.base, _problems = teacher_force.baseline_dists(baseline, log)
        self.seconds: dict[Path, float] = {}


@contextmanager
def watching(watch: Watch | None, prepared: PreparedRun) -> Iterator[None]:
    """`prepared` generating under `watch` (None: drift not asked for)."""
    if watch is None:
        yield
        return
    with teacher_force.watched(prepared, watch.baseline, watch.base) as spent:
        try:
            yield
        finally:
            if spent():
                watch.seconds[prepared.dir] = watch.seconds.get(prepared.dir, 0.0) + spent()


def force_all(baseline: RunResult, runs: list[tuple[PreparedRun, RunResult]],
              log: Callable[[str], None], watch: Watch | None = None) -> Forced:
    """Teacher-force every run (candidates, replicates) on the baseline's answers where not stored yet.
    The seconds count what the runs' own generations spent recording equal answers (`watch`)."""
    out = Forced(seconds=dict(watch.seconds) if watch is not None else {})
    base = watch.base if watch is not None else teacher_force.baseline_dists(baseline, log)[0]  # read once
    if not base:
        log(f"{baseline.name}: {NO_LOGPROBS}")
        return out
    for prepared, result in runs:
        scored = teacher_force.score(prepared, result, baseline, base, log)
        if scored.reason:
            log(f"{prepared.label}: {scored.reason}: drift not measured" if not scored.records
                else f"{prepared.label}: {scored.reason}: drift measured on {len(scored.records)} items only")
            out.reasons[result.dir] = scored.reason
        if scored.scored_now:
            out.seconds[result.dir] = out.seconds.get(result.dir, 0.0) + scored.seconds
    return out


def drift_of(baseline: RunResult, run: RunResult, comparison: Comparison, confidence: float,
             log: Callable[[str], None], seconds: float | None = None) -> Drift | None:
    """`run`'s drift against `baseline` from the stored records; None when it has none for this baseline."""
    stored = dists_store.read(run.dir, ForcedDists, dists_store.forced_name(baseline.manifest.key or baseline.dir.name),
                              warn=log)
    if not stored.present:
        return None
    base, problems = teacher_force.baseline_dists(baseline, lambda _m: None)
    sha = {k: dists_store.encode_sha(v) for k, v in base.items()}
    forced = {k: r for k, r in stored.records.items() if stored.lines[k].baseline_sha256 == sha.get(k)}
    drift = compute(run.name, run.items, base, forced, comparison, baseline.generations, run.generations, confidence)
    drift.notes += [*problems, *stored.problems]
    drift.seconds = seconds
    drift.generation_seconds = sum(s.seconds or 0.0 for s in run.manifest.sessions) or None
    return drift


def add_drift(report: Any, seconds: dict[Path, float], reasons: dict[Path, str] | None = None) -> None:
    """Each run of an evals.api.CompareReport (the noise floor, the candidates) gets its drift where its
    records are stored; a report with none says why, as does a run that could not be read (`reasons`)."""
    runs = [(report.noise_floor_run, report.noise_floor)] if report.noise_floor_run is not None else []
    runs += list(zip(report.candidates, report.comparisons))
    for run, comparison in runs:
        if run is not None and comparison is not None:
            found = drift_of(report.baseline, run, comparison, 0.95, lambda _m: None, seconds.get(run.dir))
            if found is not None:
                report.drift[run.name] = found
                if run.dir in (reasons or {}):  # the read stopped part-way: why, beside the figures it left
                    found.notes.append(f"teacher-forced read stopped: {(reasons or {})[run.dir]}")
    unread = [f"{run.name}: {(reasons or {})[run.dir]}: drift not measured" for run, _c in runs
              if run is not None and run.name not in report.drift and run.dir in (reasons or {})]
    if unread:
        report.drift_note = "; ".join(unread)
    elif not report.drift:
        report.drift_note = NOT_MEASURED if baseline_has_logprobs(report.baseline) else NO_LOGPROBS
    attach_tokens(report.baseline, list(report.drift.values()))
    floor = report.drift.get(report.noise_floor_run.name) if report.noise_floor_run is not None else None
    for run in report.candidates:
        found = report.drift.get(run.name)
        if found is None:
            continue
        if floor is not None:
            attach_floor(found, floor)
        found.effective = effective_length(run.name, report.scored.get(run.name, []),
                                           report.scored.get(report.baseline.name, []), found)


def attach_tokens(baseline: RunResult, drifts: list[Drift]) -> None:
    """The baseline's answer tokens as text (one decoding, shared) on every drift with per-item records."""
    ids = {i for d in drifts for i in d.per_item}
    if not ids:
        return
    texts, note = answer_pieces(baseline, sorted(ids))
    for d in drifts:
        d.tokens, d.tokens_note = texts, note


def attach_floor(drift: Drift, aa: Drift) -> None:
    """The A/A drift (a baseline replicate read on the baseline's answers) as `drift`'s noise floor."""
    drift.floor = {p.pack: p.mean_kl for p in aa.packs}
    if aa.overall is not None:
        drift.floor["all"] = aa.overall.mean_kl
    drift.floor_run = aa.candidate


def baseline_has_logprobs(baseline: RunResult) -> bool:
    return bool(dists_store.read(baseline.dir, TokenDists).records)


def pieces(tokenizer: Any, ids: list[int]) -> list[str]:
    """One text piece per token of `ids` (joined, they are the decoded answer, special tokens included)."""
    seqs: list[list[int]] = []
    for i in range(len(ids)):
        lo = max(0, i - WINDOW)
        seqs += [ids[lo:i], ids[lo:i + 1]]
    if not seqs:
        return []
    texts = tokenizer.batch_decode(seqs, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    out = []
    for before, after in zip(texts[::2], texts[1::2]):
        piece = after[len(os.path.commonprefix([before, after])):]
        # an unfinished character decodes as U+FFFD: it belongs to the token that completes it
        out.append(piece.rstrip(_PARTIAL) if after.endswith(_PARTIAL) else piece)
    return out


def baseline_tokenizer(baseline: RunResult) -> tuple[Any | None, str | None]:
    """(the tokenizer the baseline generated with, None) or (None, why it cannot be loaded here)."""
    m = baseline.manifest.model
    if m is None or m.kind not in _KINDS or not m.spec or not m.location:
        return None, f"{baseline.name}'s manifest names no local model: the strip shows token ids"
    try:
        return load_tokenizer(ModelSource(m.spec, m.kind, m.location, dict(m.identity))), None
    except Exception as exc:  # a missing file, a hub id offline: the strip is still readable by token ids
        return None, f"the tokenizer of {m.spec!r} could not be loaded ({str(exc)[:200]}): the strip shows token ids"


def answer_pieces(baseline: RunResult, item_ids: Iterable[str]) -> tuple[dict[str, list[str]], str | None]:
    """Each item's baseline answer as token pieces (ids as "#123" when the tokenizer is not here), and why ids."""
    wanted = [i for i in item_ids if i in baseline.generations]
    if not wanted:
        return {}, None
    tokenizer, note = baseline_tokenizer(baseline)
    out: dict[str, list[str]] = {}
    for item_id in wanted:
        ids = list(baseline.generations[item_id].output_ids or [])
        out[item_id] = pieces(tokenizer, ids) if tokenizer is not None else [f"#{t}" for t in ids]
    return out, note


__all__ = ["Forced", "Watch", "watching", "NO_LOGPROBS", "NOT_MEASURED", "add_drift", "attach_floor", "attach_tokens",
           "answer_pieces", "baseline_has_logprobs", "drift_of", "force_all", "pieces"]
