"""A `locale` hint decides the decimal separator and the date order where the written
form is truly ambiguous; an explicit `decimal`/`date_order` wins; nothing is guessed from
today's date. In the `files` pack a column can set the locale per row (a CSV that mixes
documents of several countries), and a field can carry `locale` in its options."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evalrun.evals.scoring import score_field, score_item
from evalrun.tasks import get_pack
from evalrun.tasks.base import ParamError
from evalrun.values.dates import read_date_order
from evalrun.values.amounts import extract_amounts
from evalrun.values.registry import field_type
from evalrun.values.locales import locale_date_order, locale_decimal, locale_problem, read_decimal
from tests.fakes.runs import answered


@pytest.mark.parametrize(("locale", "decimal", "order"), [
    ("de-CH", ".", "dmy"), ("de-DE", ",", "dmy"), ("de", ",", "dmy"), ("en-IN", ".", "dmy"),
    ("ja-JP", ".", "ymd"), ("fr-FR", ",", "dmy"), ("en-US", ".", "mdy"), ("en_GB", ".", "dmy"),
    ("en", ".", "ymd"), ("es-MX", ".", "dmy"), ("es-ES", ",", "dmy"), ("en-CA", ".", "ymd"),
    ("pt-BR", ",", "dmy"), ("ar-SA", ".", "dmy"), ("fa-IR", ".", "ymd"),
])
def test_a_locale_names_its_decimal_separator_and_date_order(locale: str, decimal: str, order: str) -> None:
    assert (locale_decimal(locale), locale_date_order(locale)) == (decimal, order)
    assert locale_problem(locale) is None


@pytest.mark.parametrize("bad", ["german", "xx-YY", "de-CH-extra-stuff", 12, ""])
def test_a_locale_that_cannot_be_read_is_named(bad: Any) -> None:
    assert locale_problem(bad) is not None
    with pytest.raises(ValueError, match="locale"):
        read_date_order({"locale": bad})


def test_the_locale_decides_the_date_order_and_an_explicit_one_wins() -> None:
    assert score_field("date", "2024-03-05", "03/05/2024", locale="en-US").outcome == "correct"
    assert score_field("date", "2024-03-05", "05/03/2024", locale="fr-FR").outcome == "correct"
    assert score_field("date", "2024-03-05", "05/03/2024", locale="en-US").subcode == "day_month_swap"
    assert score_field("date", "2024-03-05", "05/03/2024", locale="en-US", date_order="dmy").outcome == "correct"
    assert score_field("date", "2024-03-05", "05/03/2024", locale="en-US", dayfirst=True).outcome == "correct"
    # where the locale mixes orders (or writes year first), a/b/yyyy stays ambiguous: never credited
    for locale in ("ja-JP", "en-CA", "en"):
        fs = score_field("date", "2024-03-05", "03/05/2024", locale=locale)
        assert fs.outcome == "wrong_value" and fs.detail.startswith("ambiguous"), fs
    assert read_date_order({}) == "dmy"  # no locale: the documented default, not the machine's


def test_the_locale_decides_the_decimal_separator_and_an_explicit_one_wins() -> None:
    assert read_decimal(None, "de-DE", "auto") == ","
    assert read_decimal(None, "de-CH", "auto") == "."
    assert read_decimal(".", "de-DE", "auto") == "."
    assert read_decimal(None, None, "auto") == "auto"
    assert extract_amounts("EUR 1,234", read_decimal(None, "fr-FR", "auto"))[0].value == Decimal("1.234")
    assert extract_amounts("USD 1,234", read_decimal(None, "en-US", "auto"))[0].value == 1234
    assert field_type("amount").with_locale({}, "de-DE") == {"locale": "de-DE", "decimal": ","}
    assert field_type("amount").with_locale({"decimal": "."}, "de-DE") == {"locale": "de-DE", "decimal": "."}
    assert field_type("date").with_locale({}, "en-US") == {"locale": "en-US", "date_order": "mdy"}
    assert field_type("date").with_locale({"dayfirst": True}, "en-US") == {"locale": "en-US", "dayfirst": True}
    # the decimal the locale writes into the options is what the scorer reads
    assert score_field("number", "2.5", "2,500", **field_type("number").with_locale({}, "de-DE")).outcome == "correct"
    assert score_field("number", "2500", "2,500", **field_type("number").with_locale({}, "en-US")).outcome == "correct"


CSV = (
    "ref,locale,text,total,weight,due\n"
    'de1,de-DE,"Rechnung. Gesamt: 1.234,50 EUR. Gewicht 2,500 kg. Fällig 04.03.2024.","1.234,50 EUR","2,500",'
    "2024-03-04\n"
    'us1,en-US,"Invoice. Total: USD 1,234.50. Weight 2,500 kg. Due 03/04/2024.","USD 1,234.50","2,500",'
    "2024-03-04\n"
)
FIELDS = {"total": {"type": "amount", "question": "What is the total?"},
          "weight": {"type": "number", "question": "What is the weight in kg?"},
          "due": {"type": "date", "question": "When is it due?"}}


def _params(tmp_path: Path, **over: Any) -> Any:
    path = tmp_path / "mixed.csv"
    path.write_text(CSV, encoding="utf-8")
    task = {"name": "mixed", "path": str(path), "id_column": "ref", "document": "{text}", "mode": "per_field",
            "fields": FIELDS, **over}
    return get_pack("files").params.model_validate(task)


def _scores(tmp_path: Path, answers: dict[str, str], **over: Any) -> dict[str, tuple[str, str | None]]:
    pack = get_pack("files")
    out = {}
    for item in pack.items(_params(tmp_path, **over), lambda s: len(s.split()), None):
        scored = score_item(item, answered(item, answers[item.id]))
        fs = scored.fields[item.fields[0].name]
        out[item.id] = (fs.outcome, fs.subcode)
    return out


# each row answered in its own convention: the German weight "2,500" is 2.5 kg, the American 2500 kg
RIGHT = {"mixed/de1/total": "1.234,50 €", "mixed/de1/weight": "2,5 kg", "mixed/de1/due": "04.03.2024",
         "mixed/us1/total": "$1,234.50", "mixed/us1/weight": "2500 kg", "mixed/us1/due": "03/04/2024"}


def test_a_locale_column_sets_each_rows_decimal_and_date_order(tmp_path: Path) -> None:
    scores = _scores(tmp_path, RIGHT, locale_column="locale")
    assert set(scores.values()) == {("correct", None)}, scores
    items = {it.id: it for it in get_pack("files").items(_params(tmp_path, locale_column="locale"),
                                                        lambda s: len(s.split()), None)}
    assert items["mixed/de1/weight"].fields[0].options == {"locale": "de-DE", "decimal": ","}
    assert items["mixed/us1/due"].fields[0].options == {"locale": "en-US", "date_order": "mdy"}


def test_a_row_read_in_another_rows_convention_earns_no_credit(tmp_path: Path) -> None:
    wrong = {**RIGHT, "mixed/de1/weight": "2500 kg", "mixed/us1/weight": "2.5 kg", "mixed/us1/due": "04/03/2024"}
    scores = _scores(tmp_path, wrong, locale_column="locale")
    assert scores["mixed/de1/weight"] == ("wrong_value", "scale_error")
    assert scores["mixed/us1/weight"] == ("wrong_value", "scale_error")
    assert scores["mixed/us1/due"] == ("wrong_value", "day_month_swap")
    # without the column one convention reads both rows: the right German weight is then a scale error
    assert _scores(tmp_path, RIGHT)["mixed/de1/weight"] == ("wrong_value", "scale_error")
    assert _scores(tmp_path, RIGHT)["mixed/us1/due"] == ("wrong_value", "day_month_swap")


def test_a_fields_explicit_option_wins_over_the_rows_locale(tmp_path: Path) -> None:
    fields = {**FIELDS, "weight": {**FIELDS["weight"], "options": {"decimal": "."}}}
    items = {it.id: it for it in get_pack("files").items(_params(tmp_path, fields=fields, locale_column="locale"),
                                                        lambda s: len(s.split()), None)}
    assert items["mixed/de1/weight"].fields[0].options == {"decimal": ".", "locale": "de-DE"}
    # the German row's 2,500 is then 2500, so its German answer 2,5 is a scale error
    scores = _scores(tmp_path, RIGHT, locale_column="locale", fields=fields)
    assert scores["mixed/de1/weight"] == ("wrong_value", "scale_error")
    assert scores["mixed/us1/weight"] == ("correct", None)


def test_a_field_may_carry_its_own_locale(tmp_path: Path) -> None:
    fields = {**FIELDS, "due": {**FIELDS["due"], "options": {"locale": "en-US"}}}
    items = {it.id: it for it in get_pack("files").items(_params(tmp_path, fields=fields),
                                                        lambda s: len(s.split()), None)}
    assert items["mixed/us1/due"].fields[0].options == {"locale": "en-US", "date_order": "mdy"}


def test_a_bad_locale_is_a_config_error_naming_where(tmp_path: Path) -> None:
    fields = {**FIELDS, "due": {**FIELDS["due"], "options": {"locale": "klingon"}}}
    with pytest.raises((ParamError, ValidationError), match="klingon"):
        _params(tmp_path, fields=fields)
    with pytest.raises((ParamError, ValidationError), match="'nope' not found"):
        _params(tmp_path, locale_column="nope")
    (tmp_path / "bad.csv").write_text(CSV.replace("en-US", "xx-YY"), encoding="utf-8")
    with pytest.raises((ParamError, ValidationError), match="xx-YY"):
        get_pack("files").params.model_validate({"name": "m", "path": str(tmp_path / "bad.csv"), "id_column": "ref",
                                                 "document": "{text}", "fields": FIELDS,
                                                 "locale_column": "locale"})
