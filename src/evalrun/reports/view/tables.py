"""The view's tables. Every figure is on the paired items (both runs answered), so the pack table, the
field table and the verdict speak about the same items."""

from __future__ import annotations

from typing import Any

from evalrun.evals.compare import Comparison, PackComparison
from evalrun.evals.results import RunResult
from evalrun.evals.speed import effects_facts, method_label
from evalrun.evals.gate import Verdict
from evalrun.reports.view.model import FieldRow, NoiseFloor, PackRow, RunInfo


def _pct(x: float) -> float:
    return 100.0 * x


def run_info(run: RunResult, role: str, baseline: RunResult | None = None) -> RunInfo:
    m = run.manifest
    as_written = m.to_dict()  # the label and effects functions read the manifest as written
    return RunInfo(
        name=run.name, role=role, dir=str(run.dir),
        model=(m.model.spec if m.model else None) or m.config.model or "",
        device=m.device or "", dtype=m.dtype or "",
        method=method_label(as_written, baseline.manifest.to_dict() if baseline is not None else None), emulated=list(m.emulated), effects=effects_facts(as_written),
        items=len(run.items),
    )


def _detail(pc: PackComparison) -> dict[str, Any]:
    """What the JSON adds beside the table's figures."""
    st = pc.stats
    out: dict[str, Any] = {
        "baseline_micro_f1": pc.baseline_f1, "candidate_micro_f1": pc.candidate_f1,
        "f1_delta_points": pc.f1_delta_points,
        "first_divergent_token": sorted(pc.first_divergence),
        "transitions": [{"baseline": b, "candidate": c, "fields": n} for (b, c), n in sorted(pc.transitions.items())],
        "breakdowns": [
            {"dimension": b.dimension, "value": b.value, "items": b.n,
             "baseline_accuracy": b.baseline_accuracy, "candidate_accuracy": b.candidate_accuracy}
            for b in sorted(pc.breakdowns.values(), key=lambda b: (b.dimension, b.value))
        ],
    }
    if st:
        out["statistics"] = {
            "discordant_baseline_only": st.paired.b, "discordant_candidate_only": st.paired.c,
            "mcnemar_p": st.paired.p_value,
            "accuracy_delta_ci_points": [_pct(st.interval.low), _pct(st.interval.high)],
            "micro_f1_delta_ci_points": [_pct(st.f1_interval.low), _pct(st.f1_interval.high)],
            "confidence": st.interval.confidence, "bootstrap_resamples": st.interval.n_resamples,
            "min_detectable_difference_points": _pct(st.mde), "mcnemar_p_by_field_type": st.by_kind_p,
        }
    return out


def pack_row(pc: PackComparison, verdict: Verdict | None, aa: PackComparison | None) -> PackRow:
    st = pc.stats
    return PackRow(
        pack=pc.pack, n=pc.n, baseline_accuracy=pc.baseline_accuracy, candidate_accuracy=pc.candidate_accuracy,
        delta_points=pc.delta_points,
        ci_low_points=_pct(st.interval.low) if st else None, ci_high_points=_pct(st.interval.high) if st else None,
        confidence=st.interval.confidence if st else None, p_value=st.paired.p_value if st else None,
        mde_points=_pct(st.mde) if st and st.mde is not None else None,
        harmful_flips=len(pc.harmful), harmful_items=pc.harmful_items, helpful_items=pc.helpful_items,
        errors=pc.errors, identical_outputs=pc.identical_outputs, agreement=pc.agreement,
        first_divergence=tuple(sorted(pc.first_divergence)),
        aa_harmful=aa.harmful_items if aa else None,
        status=verdict.pack_status(pc.pack) if verdict else None,
        speed_only=pc.speed_only, detail=_detail(pc),
        recovery=pc.recovery, recovery_low=st.recovery.low if st and st.recovery else None,
        recovery_high=st.recovery.high if st and st.recovery else None,
    )


def field_rows(comparison: Comparison) -> list[FieldRow]:
    return [row for pc in comparison.packs for row in pc.fields]


def noise_floor(nf: Comparison | None) -> NoiseFloor | None:
    if nf is None:
        return None
    return NoiseFloor(run=nf.candidate, harmful_items=sum(pc.harmful_items for pc in nf.packs),
                      identical_outputs=sum(pc.identical_outputs for pc in nf.packs), items=sum(pc.n for pc in nf.packs))
