"""Typed values: what a field type means, shared by the packs and the scorer. One module per kind of value,
each total (any string in, a value or nothing out); types under values/types/, found by `values.registry`.
This layer sits just above the contract and imports nothing else of ours."""

from evalrun.values.amounts import AmountCand, distinct_amounts, extract_amounts, fmt_amount, interpret_number
from evalrun.values.currencies import currency_code, same_currency
from evalrun.values.dates import (
    DATE_ORDERS, AmbiguousDate, DateParts, distinct_dates, extract_dates, find_dates, fmt_date, mask_dates,
    read_date_order,
)
from evalrun.values.enums import enum_lookup, find_enum_values
from evalrun.values.ids import id_candidates, norm_id
from evalrun.values.list_markers import mask_list_markers
from evalrun.values.registry import KINDS, field_type, gold_value, is_absent_value, type_names
from evalrun.values.text import ABSENT_MARKERS, coerce, is_absent, norm_text, prep

__all__ = [
    "ABSENT_MARKERS", "AmbiguousDate", "AmountCand", "DATE_ORDERS", "DateParts", "KINDS",
    "coerce", "mask_list_markers", "read_date_order", "same_currency",
    "currency_code", "distinct_amounts", "distinct_dates", "enum_lookup",
    "extract_amounts", "extract_dates", "field_type", "find_dates", "find_enum_values", "fmt_amount", "fmt_date",
    "gold_value", "id_candidates", "interpret_number", "is_absent", "is_absent_value", "mask_dates",
    "norm_id", "norm_text", "prep", "type_names",
]
