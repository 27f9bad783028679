"""checked_id: ids with a check digit; a failed check is named, a gold that fails its own is refused."""

from __future__ import annotations

from typing import Any

import pytest

from evalrun.evals.scoring import score_field
from evalrun.values.registry import gold_value, user_option_problem

IBAN = "DE89 3704 0044 0532 0130 00"


@pytest.mark.parametrize(("gold", "pred", "outcome", "sub", "opts"), [
    (IBAN, "DE89370400440532013000", "correct", None, {}),
    (IBAN, "The IBAN is de89 3704 0044 0532 0130 00.", "correct", None, {}),
    (IBAN, IBAN, "correct", None, {"scheme": "iban"}),
    ("CSQU3054383", "CSQU 305438 3", "correct", None, {}),  # ISO 6346 container
    ("US0378331005", "ISIN: US0378331005", "correct", None, {"scheme": "isin"}),
    ("DE136695976", "DE 136 695 976", "correct", None, {"scheme": "vat"}),
    # must not be credited
    (IBAN, "DE89 3704 0044 0532 0131 00", "wrong_value", "check_digit_failed", {}),
    (IBAN, "DE89 3704 0044 0532 0103 00", "wrong_value", "check_digit_failed", {}),  # a swap fails mod 97
    ("CSQU3054383", "CSQU3054384", "wrong_value", "check_digit_failed", {}),
    ("US0378331005", "ES0378331005", "wrong_value", "one_char_edit", {"scheme": "isin"}),  # passes, another id
    ("4006381333931", "4006831333931", "wrong_value", "transposition", {"scheme": "ean"}),
    (IBAN, None, "missing", None, {}),
    (None, IBAN, "hallucinated", None, {}),
])
def test_checked_id_table(gold: Any, pred: Any, outcome: str, sub: str | None, opts: dict[str, Any]) -> None:
    fs = score_field("checked_id", gold, pred, **opts)
    assert (fs.outcome, fs.subcode) == (outcome, sub), fs


def test_a_failed_check_is_named_in_the_detail() -> None:
    fs = score_field("checked_id", IBAN, "DE89 3704 0044 0532 0131 00")
    assert fs.detail == "DE89370400440532013100 fails the iban check digit; one_char_edit"


def test_a_gold_that_fails_its_own_check_is_no_value() -> None:
    assert gold_value("checked_id", "DE89 3704 0044 0532 0131 00", {}) is None
    assert gold_value("checked_id", "US0378331006", {"scheme": "isin"}) is None
    assert gold_value("checked_id", IBAN, {"scheme": "isin"}) is None  # a valid IBAN is no ISIN
    assert gold_value("checked_id", IBAN, {}) == "DE89370400440532013000"
    fs = score_field("checked_id", "DE89 3704 0044 0532 0131 00", "DE89 3704 0044 0532 0131 00")
    assert fs.detail == "gold not parseable as checked_id"


def test_scheme_is_validated() -> None:
    assert user_option_problem("checked_id", {"scheme": "swift"}) == (
        "scheme", "scheme must be one of iban, isin, iso6346, lei, vat, ean, isbn; got 'swift'")
    with pytest.raises(ValueError, match="scheme"):
        score_field("checked_id", IBAN, IBAN, scheme="swift")
