"""Why two numbers differ, in the scorer's priority (docs/field-types.md). A digit sub-code claims a slip of
one or two digits explains it, so it is given only where that is plausible ("1" vs 24 is another number)."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation, localcontext

from rapidfuzz.distance import OSA, Levenshtein

_MAX_DIGITS = 64
# why two different numbers differ, in priority order (the numeric types add their own)
NUMERIC_SUBCODES = ("sign_flip", "scale_error", "rounding", "digits_transposed", "digit_dropped",
                    "digit_inserted", "digit_changed")


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


def _int_len(v: Decimal) -> int:
    """Digits before the decimal point (0 for |v| < 1)."""
    return max(v.adjusted() + 1, 0) if v else 0


def _is_rounding(g: Decimal, p: Decimal) -> bool:
    """One value is the other rounded (half-up or half-even) to its coarser precision; a truncation is not."""
    if (g < 0) != (p < 0) or len(g.as_tuple().digits) + len(p.as_tuple().digits) > 120:
        return False
    dg, dp = _eff_decimals(g), _eff_decimals(p)
    if dg == dp:
        return False
    fine, coarse, places = (g, p, dp) if dg > dp else (p, g, dg)
    with localcontext() as ctx:
        ctx.prec = 150
        unit = Decimal(1).scaleb(-places)
        try:
            return any(fine.quantize(unit, rounding=r) == coarse for r in (ROUND_HALF_UP, ROUND_HALF_EVEN))
        except InvalidOperation:
            return False


def _digit_edit(a: str, b: str, int_change: int) -> str | None:
    """The digit slip turning `a` into `b`, or None where no small slip explains it (more than two edits, half
    the digits, or an integer part whose length the slip cannot change so)."""
    longer = max(len(a), len(b))
    if longer > _MAX_DIGITS:
        return None
    if OSA.distance(a, b) == 1 and Levenshtein.distance(a, b) == 2:
        return "digits_transposed" if int_change == 0 and 2 < longer else None
    ops = Levenshtein.editops(a, b)
    if not ops or len(ops) > 2 or 2 * len(ops) >= longer:
        return None
    tags = [op.tag for op in ops]
    if int_change > sum(t != "replace" for t in tags):
        return None
    if set(tags) == {"delete"}:
        return "digit_dropped"
    return "digit_inserted" if set(tags) == {"insert"} else "digit_changed"


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
    if max(map(len, (gw, pw, gs, ps))) <= _MAX_DIGITS:
        pairs.sort(key=lambda ab: OSA.distance(*ab))
    return _digit_edit(*pairs[0], abs(_int_len(g) - _int_len(p)))


__all__ = ["NUMERIC_SUBCODES", "numeric_subcode"]
