"""Written month names, every language the date reader knows, as whole words. A name that is also an everyday
word ("marco", "gen", "ago") is read only in a full date; Portuguese "set"/"out" and Polish three-letter
abbreviations are left out on purpose (common words elsewhere)."""

from __future__ import annotations

_BY_LANGUAGE: dict[str, dict[int, tuple[str, ...]]] = {
    "en": {1: ("january", "jan"), 2: ("february", "feb"), 3: ("march", "mar"), 4: ("april", "apr"),
           5: ("may",), 6: ("june", "jun"), 7: ("july", "jul"), 8: ("august", "aug"),
           9: ("september", "sept", "sep"), 10: ("october", "oct"), 11: ("november", "nov"),
           12: ("december", "dec")},
    "de": {1: ("januar", "jänner", "jän"), 2: ("februar",), 3: ("märz", "mär", "maerz"), 5: ("mai",),
           6: ("juni",), 7: ("juli",), 10: ("oktober", "okt"), 12: ("dezember", "dez")},
    "fr": {1: ("janvier", "janv"), 2: ("février", "fevrier", "févr", "fevr"), 3: ("mars",),
           4: ("avril", "avr"), 6: ("juin",), 7: ("juillet", "juil"), 8: ("août", "aout"),
           9: ("septembre",), 10: ("octobre",), 11: ("novembre",), 12: ("décembre", "decembre", "déc")},
    "nl": {1: ("januari",), 2: ("februari",), 3: ("maart", "mrt"), 5: ("mei",), 8: ("augustus",)},
    "pl": {1: ("styczeń", "styczen", "stycznia"), 2: ("luty", "lutego"), 3: ("marzec", "marca"),
           4: ("kwiecień", "kwiecien", "kwietnia"), 5: ("maj", "maja"), 6: ("czerwiec", "czerwca"),
           7: ("lipiec", "lipca"), 8: ("sierpień", "sierpien", "sierpnia"),
           9: ("wrzesień", "wrzesien", "września", "wrzesnia"),
           10: ("październik", "pazdziernik", "października", "pazdziernika"),
           11: ("listopad", "listopada"), 12: ("grudzień", "grudzien", "grudnia")},
    "pt": {1: ("janeiro",), 2: ("fevereiro", "fev"), 3: ("março", "marco"), 4: ("abril", "abr"),
           5: ("maio",), 6: ("junho",), 7: ("julho",), 8: ("agosto", "ago"), 9: ("setembro",),
           10: ("outubro",), 11: ("novembro",), 12: ("dezembro",)},
    "es": {1: ("enero", "ene"), 2: ("febrero",), 3: ("marzo",), 5: ("mayo",), 6: ("junio",),
           7: ("julio",), 9: ("septiembre", "setiembre"), 10: ("octubre",), 11: ("noviembre",),
           12: ("diciembre", "dic")},
    "it": {1: ("gennaio", "gen"), 2: ("febbraio",), 4: ("aprile",), 5: ("maggio", "mag"), 6: ("giugno", "giu"),
           7: ("luglio", "lug"), 9: ("settembre",), 10: ("ottobre", "ott"), 11: ("novembre",),
           12: ("dicembre",)},
    # Gregorian months as written in Egypt and the Gulf
    "ar": {1: ("يناير",), 2: ("فبراير",), 3: ("مارس",), 4: ("أبريل", "ابريل"), 5: ("مايو",), 6: ("يونيو",),
           7: ("يوليو",), 8: ("أغسطس", "اغسطس"), 9: ("سبتمبر",), 10: ("أكتوبر", "اكتوبر"),
           11: ("نوفمبر",), 12: ("ديسمبر",)},
}
# names that are read only in a full date with a year (see the module docstring)
_NEED_YEAR_WORDS = frozenset({"may", "marco", "mayo", "mag", "gen", "ago", "ene", "dic", "fev", "abr", "mrt",
                              "giu", "lug", "ott", "maj"})

MONTHS: dict[str, int] = {}
for _lang in ("en", "de", "fr", "nl", "pl", "pt", "es", "it", "ar"):  # the first language keeps a name
    for _month, _names in _BY_LANGUAGE[_lang].items():
        for _name in _names:
            MONTHS.setdefault(_name, _month)
NEEDS_YEAR = _NEED_YEAR_WORDS
# surely months after "14." (the clause splitter's list): no abbreviation that is a word ("ago."); "may" stays
MONTH_NAMES = frozenset(MONTHS) - (NEEDS_YEAR - {"may"})
LONGEST = max(map(len, MONTHS))

__all__ = ["LONGEST", "MONTHS", "MONTH_NAMES", "NEEDS_YEAR"]
