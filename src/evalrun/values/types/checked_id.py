"""checked_id: an identifier with a check digit (IBAN, ISIN, ISO 6346, VAT, ...), checked with python-stdnum."""

from __future__ import annotations

from functools import lru_cache
from importlib import import_module
from typing import Any, Literal

from pydantic import Field, field_validator

from evalrun.values.ids import id_candidates, id_spans, norm_id
from evalrun.values.types._base import SELF_CONTRADICTING, Example, FieldType, Found, Options, Verdict, to_original
from evalrun.values.types.id import id_verdict

# scheme -> its python-stdnum module
SCHEMES = {"iban": "stdnum.iban", "isin": "stdnum.isin", "iso6346": "stdnum.iso6346", "lei": "stdnum.lei",
           "vat": "stdnum.eu.vat", "ean": "stdnum.ean", "isbn": "stdnum.isbn"}
# tried in this order when no scheme is given; digit-only codes (ean, isbn) pass by chance too often
AUTO = ("iban", "isin", "iso6346", "lei", "vat")
Scheme = Literal["iban", "isin", "iso6346", "lei", "vat", "ean", "isbn"]

RULES = f"""\
* Normalised as an id (uppercase; spaces and - . / _ dropped) and compared exactly.
* `scheme` names the check ({", ".join(SCHEMES)}; python-stdnum validates each: IBAN mod 97,
  ISIN Luhn, ISO 6346 mod 11, LEI mod 97, EU VAT per country, EAN/GTIN, ISBN). Without it the
  gold's scheme is the first of {", ".join(AUTO)} that it passes.
* A gold that fails its own check is no value of the type: a pack refuses it before the run (and
  `score_field` compares it as plain text).
* A candidate that fails the gold's check is wrong_value/check_digit_failed, the detail naming
  the check (and the slip, where one explains it). A candidate that passes the check but is
  another id gets the id sub-codes: transposition > one_char_edit > prefix_or_suffix.
"""


@lru_cache(maxsize=None)
def _module(scheme: str) -> Any:
    return import_module(SCHEMES[scheme])


def _passes(scheme: str, code: str) -> bool:
    try:
        return bool(code) and len(code) <= 64 and bool(_module(scheme).is_valid(code))
    except Exception:  # noqa: BLE001 - a checker's surprise on odd input is a failed check, never a crash
        return False


def _scheme(code: str, chosen: str | None) -> str | None:
    """The scheme whose check `code` passes: the field's own (`chosen`), or the first of AUTO."""
    if chosen is not None:
        return chosen if _passes(chosen, code) else None
    return next((s for s in AUTO if _passes(s, code)), None)


class CheckedIdOptions(Options):
    scheme: Scheme | None = Field(default=None, description=f"the check: {', '.join(SCHEMES)}; default: the first of "
                                  f"{', '.join(AUTO)} that the gold passes")

    @field_validator("scheme", mode="before")
    @classmethod
    def _known(cls, v: Any) -> Any:
        if v is not None and v not in SCHEMES:
            raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}; got {v!r}")
        return v


class CheckedId(FieldType[CheckedIdOptions]):
    name = "checked_id"
    doc = "An identifier with a check digit (IBAN, ISIN, ISO 6346, LEI, VAT, EAN, ISBN), checked with python-stdnum."
    noun = "an id that passes its check digit"
    rules = RULES
    subcodes = ("check_digit_failed", "transposition", "one_char_edit", "prefix_or_suffix", SELF_CONTRADICTING)
    typed = True
    hint = "an identifier, exactly as written"
    Options = CheckedIdOptions
    gold_options = ("scheme",)
    golds = (("DE89 3704 0044 0532 0130 00", {}), ("US0378331005", {"scheme": "isin"}), ("CSQU 305438 3", {}),
             ("DE136695976", {"scheme": "vat"}), ("4006381333931", {"scheme": "ean"}))
    examples = {
        "check_digit_failed": (Example("DE89 3704 0044 0532 0130 00", "DE89 3704 0044 0532 0131 00"),
                               Example("CSQU3054383", "CSQU3054384")),
        "transposition": (Example("4006381333931", "4006831333931", {"scheme": "ean"}),),
        "one_char_edit": (Example("US0378331005", "ES0378331005", {"scheme": "isin"}),),
        "prefix_or_suffix": (Example("0000096385074", "96385074", {"scheme": "ean"}),),
        SELF_CONTRADICTING: (Example("DE89370400440532013000", "The IBAN is DE89 3704 0044 0532 0130 00. The "
                                     "document does not state an IBAN.", {"field": "IBAN"}),),
    }

    def candidates(self, s: str, opts: CheckedIdOptions) -> list[Any]:
        return list(dict.fromkeys(id_candidates(s)[1]))

    def find(self, s: str, opts: CheckedIdOptions) -> list[Found]:
        return [Found(*to_original(s, a, b), c) for a, b, c in id_spans(s)[1]]

    def gold(self, s: str, opts: CheckedIdOptions) -> Any | None:
        code = norm_id(s)
        return code if _scheme(code, opts.scheme) is not None else None

    def compare(self, g: str, p: str, opts: CheckedIdOptions) -> Verdict:
        if g == p:
            return "correct", None, None
        scheme = _scheme(g, opts.scheme) or "?"
        outcome, slip, _ = id_verdict(g, p)
        if not _passes(scheme, p):
            return outcome, "check_digit_failed", f"{p} fails the {scheme} check digit" + (f"; {slip}" if slip else "")
        return outcome, slip, None
