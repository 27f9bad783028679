"""Drift figures (evals/drift/_drift.py) as text cells, the same in every renderer."""

from __future__ import annotations

from typing import Any

from evalrun.evals.drift import Drift, Figure, PackDrift
from evalrun.evals.compare import Flip

HEADERS = ["pack", "items", "tokens", "mean KL (95% CI)", "A/A mean KL (95% CI)", "p99 KL", "max KL",
           "same top-1 (95% CI)", "mean Δp (95% CI)"]


def kl(x: float) -> str:
    return f"{x:.3g}"


def _fig(f: Figure, fmt: str = "{:.3g}") -> str:
    return f"{fmt.format(f.value)} [{fmt.format(f.low)}, {fmt.format(f.high)}]"


def row(p: PackDrift, floor: Figure | None = None) -> list[str]:
    """`floor`: the A/A drift's mean KL for the same pack (the noise floor), "–" when none was measured."""
    pct = "{:.1%}"
    return [p.pack, str(p.items), str(p.tokens), _fig(p.mean_kl), _fig(floor) if floor else "–", kl(p.p99_kl),
            kl(p.max_kl),
            _fig(p.same_top1, pct), _fig(p.mean_dp, "{:+.3g}")]


def rows(d: Drift) -> list[list[str]]:
    """One row per pack, then `all` when there are several packs."""
    out = [row(p, d.floor_of(p.pack)) for p in d.packs]
    if d.overall is not None and len(d.packs) > 1:
        out.append(row(d.overall, d.floor_of("all")))
    return out


def flip_text(d: Drift | None, flip: Flip) -> str | None:
    note = d.flip_note(flip) if d is not None else None
    return note.text if note is not None else None


def cost_text(d: Drift) -> str | None:
    """Teacher-forced scoring time, and its share of the candidate's generation time."""
    if d.seconds is None:
        return None
    share = f", {d.seconds / d.generation_seconds:.0%} of its generation time" if d.generation_seconds else ""
    return f"teacher-forced scoring took {d.seconds:.1f} s{share}"


def effective_text(d: Drift) -> str | None:
    return d.effective.text if d.effective is not None else None


def notes(d: Drift) -> list[str]:
    """The lines under a drift table: what could not be vouched for, the effective length, the cost."""
    return [*d.notes, *filter(None, [effective_text(d), cost_text(d)])]


def _effective_dict(d: Drift) -> dict[str, Any] | None:
    e = d.effective
    if e is None:
        return None

    def bucket(b: Any) -> dict[str, Any]:
        return {"bucket": b.label, "edge_tokens": b.edge, "items": b.items, "accuracy": b.accuracy,
                "mean_kl": b.mean_kl, "accuracy_ok": b.accuracy_ok, "kl_ok": b.kl_ok}

    return {"length": e.length, "baseline_length": e.baseline_length, "kl_bound": e.kl_bound, "rule": e.rule,
            "buckets": [bucket(b) for b in e.buckets], "baseline_buckets": [bucket(b) for b in e.baseline_buckets],
            "text": e.text}


def drift_dict(d: Drift) -> dict[str, Any]:
    """The JSON report's drift record of one run."""
    def pack(p: PackDrift) -> dict[str, Any]:
        return {"pack": p.pack, "items": p.items, "tokens": p.tokens,
                "mean_kl": vars(p.mean_kl), "p99_kl": p.p99_kl, "max_kl": p.max_kl,
                "same_top1": vars(p.same_top1), "mean_dp": vars(p.mean_dp)}

    return {"packs": [pack(p) for p in d.packs], "overall": pack(d.overall) if d.overall else None,
            "missing_items": d.missing, "notes": d.notes, "seconds": d.seconds,
            "generation_seconds": d.generation_seconds,
            "aa_floor": {k: vars(v) for k, v in d.floor.items()}, "aa_floor_run": d.floor_run,
            "effective_length": _effective_dict(d),
            "flips": [{"item_id": n.item_id, "field": n.field, "position": n.position,
                       "baseline_top1": n.baseline_top1, "baseline_top2": n.baseline_top2, "kl": n.kl,
                       "fragile": n.fragile, "text": n.text} for n in d.flips],
            "estimator": "top-k + rest-mass KL(baseline||candidate), a lower bound (docs/drift.md)"}


__all__ = ["HEADERS", "cost_text", "drift_dict", "effective_text", "notes", "flip_text", "kl", "row", "rows"]
