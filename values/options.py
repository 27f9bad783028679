"""The options a field is scored with, per kind, and what each may hold: one list the
scorer checks (a bad option is a harness bug) and packs check their configs against
(a misspelt option in a user's config is an error, never a setting quietly ignored)."""

from __future__ import annotations

from typing import Any

from evalrun.values.dates import read_date_order

_COMMON = frozenset({"aliases"})
# what a user may set per kind; `field` (the field's name) is passed by the scorer itself
USER_OPTIONS: dict[str, frozenset[str]] = {
    "amount": _COMMON | {"decimal"},
    "number": _COMMON | {"decimal"},
    "date": _COMMON | {"date_order", "dayfirst"},
    "id": _COMMON,
    "text": _COMMON,
    "enum": _COMMON | {"allowed", "synonyms"},
}


def _is_names(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value))


def option_problem(kind: str, options: dict[str, Any]) -> tuple[str, str] | None:
    """(option, what is wrong) for the first option the scorer cannot read, else None.
    Keys outside USER_OPTIONS are not judged here (score_field ignores them)."""
    if kind == "date" and ("date_order" in options or "dayfirst" in options):
        try:
            read_date_order(options)
        except ValueError as exc:
            return ("date_order" if "date_order" in options else "dayfirst"), str(exc)
    if options.get("decimal") is not None and options["decimal"] not in (".", ",", "auto"):
        return "decimal", f"decimal must be '.' or ','; got {options['decimal']!r}"
    if options.get("field") is not None and not isinstance(options["field"], str):
        return "field", f"field must be the field's name; got {options['field']!r}"
    if options.get("aliases") is not None and not _is_names(options["aliases"]):
        return "aliases", f"aliases must be a list of names; got {options['aliases']!r}"
    allowed = options.get("allowed")
    if allowed is not None and (not isinstance(allowed, (list, tuple)) or not allowed
                                or not all(isinstance(a, (str, int)) and not isinstance(a, bool) for a in allowed)):
        return "allowed", f"allowed must be a non-empty list of values; got {allowed!r}"
    synonyms = options.get("synonyms")
    if synonyms is not None and (not isinstance(synonyms, dict) or not all(
            isinstance(k, (str, int)) and isinstance(v, (str, int)) for k, v in synonyms.items())):
        return "synonyms", f"synonyms must map written names to values ({{settled: paid}}); got {synonyms!r}"
    return None


def user_option_problem(kind: str, options: dict[str, Any]) -> tuple[str, str] | None:
    """As option_problem, and every key must be an option of this kind."""
    for key in options:
        if key not in USER_OPTIONS[kind]:
            where = [k for k, names in USER_OPTIONS.items() if key in names]
            hint = f" (it is read for {', '.join(where)} fields only)" if where else ""
            return str(key), (f"not an option of {kind} fields{hint}; allowed: "
                              f"{', '.join(sorted(USER_OPTIONS[kind]))}")
    return option_problem(kind, options)
