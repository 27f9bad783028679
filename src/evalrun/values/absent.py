"""The markers that mean "no value" (N/A, none, not found, ...)."""

from __future__ import annotations

from evalrun.values.text import EDGE_STRIP, HAS_DIGIT

ABSENT_MARKERS = frozenset(
    {
        "", "n/a", "na", "n.a", "none", "null", "nil", "unknown", "not found",
        "not available", "not applicable", "not provided", "not specified",
        "not stated", "not mentioned", "not given", "not present", "no value",
        # the same in the languages the refusal reader knows (values.denials)
        "k.a", "k. a", "keine angabe", "nicht angegeben", "unbekannt", "non indiqué", "non renseigné",
        "non précisé", "inconnu", "no se indica", "no consta", "sin datos", "desconocido", "não informado",
        "non indicato", "niet vermeld", "記載なし", "なし", "不明", "該当なし", "无", "未提供",
    }
)
# A typed-field answer that starts with one of these and has no digit is a
# refusal ("Not found in the document."), not a value.
_ABSENT_PREFIXES = tuple(
    m + " " for m in ("n/a", "none", "null", "unknown", "not found", "not available",
                      "not applicable", "not provided", "not specified", "not stated",
                      "not mentioned", "not given", "not present")
)


def is_absent(s: str, prefix_rule: bool = False) -> bool:
    """Empty markers mean absent; surrounding punctuation and case are ignored."""
    if len(s) > 300 or HAS_DIGIT.search(s):  # no marker holds a digit
        return False
    t = s.strip(EDGE_STRIP)
    if not t:
        return True
    t = " ".join(t.casefold().split())
    if t in ABSENT_MARKERS:
        return True
    return prefix_rule and t.startswith(_ABSENT_PREFIXES)


