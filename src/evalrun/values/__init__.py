"""Typed values: what a field type means, shared by the packs and the scorer. One module per kind of value,
each total (any string in, a value or nothing out); types under values/types/, found by `values.registry`.
This layer sits just above the contract and imports nothing else of ours."""

from evalrun.values.amounts import AmountCand, extract_amounts, fmt_amount, interpret_number
from evalrun.values.currencies import currency_code, same_currency
from evalrun.values.dates import AmbiguousDate, DateParts, extract_dates, fmt_date, mask_dates
from evalrun.values.enums import find_enum_values
from evalrun.values.ids import id_candidates, norm_id
from evalrun.values.list_markers import mask_list_markers
from evalrun.values.registry import KINDS, gold_value, is_absent_value
from evalrun.values.text import coerce, is_absent, norm_text

__all__ = [
    "AmbiguousDate", "AmountCand", "DateParts", "KINDS", "coerce", "currency_code", "extract_amounts", "extract_dates",
    "find_enum_values", "fmt_amount", "fmt_date", "gold_value", "id_candidates", "interpret_number", "is_absent",
    "is_absent_value", "mask_dates", "mask_list_markers", "norm_id", "norm_text", "same_currency",
]
