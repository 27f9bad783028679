"""Why two different numbers differ: a sign flip, a scale error, rounding, or a
digit slip (transposed, dropped, inserted, changed), in the priority order the
scorer documents (`evalrun.evals.fields`)."""

from __future__ import annotations

from decimal import Decimal, localcontext

from rapidfuzz.distance import OSA, Levenshtein


def _digit_strings(v: Decimal) -> tuple[str, str]:
    """Digits as written, and with trailing fractional zeros removed."""
    _, digits, exp = v.as_tuple()
    s = "".join(map(str, digits)).lstrip("0") or "0"
    if isinstance(exp, int) and exp < 0:
        cut = min(len(s) - len(s.rstrip("0")), -exp)
        return s, (s[: len(s) - cut] or "0")
    return s, s


def _significant(v: Decimal) -> str:
    return "".join(map(str, v.as_tuple().digits)).strip("0")


def _eff_decimals(v: Decimal) -> int:
    exp = v.as_tuple().exponent
    if not isinstance(exp, int) or exp >= 0 or v == v.to_integral_value():
        return 0
    return -exp


def _is_rounding(g: Decimal, p: Decimal) -> bool:
    if (g < 0) != (p < 0) or len(g.as_tuple().digits) + len(p.as_tuple().digits) > 120:
        return False
    dg, dp = _eff_decimals(g), _eff_decimals(p)
    if dg == dp:
        return False
    with localcontext() as ctx:
        ctx.prec = 150
        return abs(g - p) < Decimal(1).scaleb(-min(dg, dp))


def _digit_edit(a: str, b: str) -> str | None:
    """The digit slip turning `a` into `b`, or None when more than two digits
    differ: that is another number, and calling it a dropped digit would mislead."""
    if max(len(a), len(b)) > 64:
        return None
    if OSA.distance(a, b) == 1 and Levenshtein.distance(a, b) == 2:
        return "digits_transposed"
    ops = Levenshtein.editops(a, b)
    if not ops or len(ops) > 2:
        return None
    tags = {op.tag for op in ops}
    if tags == {"delete"}:
        return "digit_dropped"
    if tags == {"insert"}:
        return "digit_inserted"
    return "digit_changed"


def numeric_subcode(g: Decimal, p: Decimal) -> str | None:
    """Why two different numbers differ, in the documented priority order."""
    if g == -p:
        return "sign_flip"
    sg, sp = _significant(g), _significant(p)
    if sg and sg == sp and abs(g) != abs(p):
        return "scale_error"
    if _is_rounding(g, p):
        return "rounding"
    (gw, gs), (pw, ps) = _digit_strings(g), _digit_strings(p)
    if gw == pw or gs == ps:
        return None
    pairs = [(gw, pw), (gs, ps)]
    if max(map(len, (gw, pw, gs, ps))) <= 64:
        pairs.sort(key=lambda ab: OSA.distance(*ab))
    return _digit_edit(*pairs[0])


__all__ = ["numeric_subcode"]
