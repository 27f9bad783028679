"""One method's effects from several workers (Ray actors) as one record.

Each worker measures what its copy of the method did on the items it generated;
the run's record is their sum, not any one of them. A method names its counters
(`Acceleration.effect_counters`: summed, element by element in a mapping or
list) and its rates (`effect_ratios`: recomputed from summed parts). Everything
else is a setting or a property of the model, the same on every worker, and
kept as it is; where workers differ, a maximum stays a maximum (`max_...`), a
flag holds only if it holds everywhere, other numbers are averaged weighted by
the calls each worker made (or the counter a method names in
`effect_weights`), and other values are kept as the list of distinct ones,
never dropped.
"""

from __future__ import annotations

from typing import Any

DEFAULT_WEIGHT = "generate_calls"


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _sum(values: list[Any]) -> Any:
    known = [v for v in values if v is not None]
    if not known:
        return None
    if all(isinstance(v, dict) for v in known):
        keys = list(dict.fromkeys(k for v in known for k in v))
        return {k: _sum([v.get(k) for v in known]) for k in keys}
    if all(isinstance(v, list) for v in known) and len({len(v) for v in known}) == 1:
        return [_sum([v[i] for v in known]) for i in range(len(known[0]))]
    if all(_number(v) for v in known):
        total = sum(known)
        return round(total, 4) if isinstance(total, float) else total
    return _distinct(known)


def _weighted(values: list[Any], weights: list[float]) -> Any:
    pairs = [(v, w) for v, w in zip(values, weights) if v is not None]
    if not pairs:
        return None
    if all(isinstance(v, dict) for v, _ in pairs):
        keys = list(dict.fromkeys(k for v, _ in pairs for k in v))
        return {k: _weighted([v.get(k) for v, _ in pairs], [w for _, w in pairs]) for k in keys}
    if all(isinstance(v, list) for v, _ in pairs) and len({len(v) for v, _ in pairs}) == 1:
        return [_weighted([v[i] for v, _ in pairs], [w for _, w in pairs]) for i in range(len(pairs[0][0]))]
    if not all(_number(v) for v, _ in pairs):
        return _distinct([v for v, _ in pairs])
    total = sum(w for _, w in pairs)
    if total <= 0:
        return round(sum(v for v, _ in pairs) / len(pairs), 4)
    return round(sum(v * w for v, w in pairs) / total, 4)


def _distinct(values: list[Any]) -> Any:
    out: list[Any] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out[0] if len(out) == 1 else out


def _merge_value(key: str, values: list[Any], weights: list[float], counters: frozenset[str]) -> Any:
    if key in counters:
        return _sum(values)
    if all(v == values[0] for v in values):
        return values[0]
    if all(isinstance(v, bool) for v in values):
        return all(values)
    known = [v for v in values if v is not None]
    if known and all(_number(v) for v in known) and key.startswith(("max_", "min_")):
        return max(known) if key.startswith("max_") else min(known)
    return _weighted(values, weights)


def merge_effects(parts: list[dict[str, Any]], counters: frozenset[str] = frozenset({DEFAULT_WEIGHT}),
                  ratios: dict[str, tuple[str, str]] | None = None,
                  weights: dict[str, str] | None = None) -> dict[str, Any]:
    """The effects of one method over every worker that ran it (`parts`, one per worker)."""
    parts = [p for p in parts if p]
    if len(parts) <= 1:
        return dict(parts[0]) if parts else {}
    ratios, weights = ratios or {}, weights or {}
    out: dict[str, Any] = {}
    for key in dict.fromkeys(k for p in parts for k in p):
        having = [p for p in parts if key in p]
        wkey = weights.get(key, DEFAULT_WEIGHT)
        w = [float(p[wkey]) if _number(p.get(wkey)) else 0.0 for p in having]
        out[key] = _merge_value(key, [p[key] for p in having], w, counters)
    for key, (num, den) in ratios.items():
        if key in out and _number(out.get(num)) and _number(out.get(den)):
            out[key] = round(out[num] / out[den], 4) if out[den] else None
    out["workers"] = len(parts)
    return out


__all__ = ["merge_effects"]
