"""Currencies named in words ("Canadian dollars", "yen", "人民币") and a country in a phrase about its currency
("the currency of Canada"). A shared name stays the shared symbol ("dollars" is "$"); "dinar", "peso",
"riyal", "dirham", "real" alone name none; a country outside such a phrase names nothing."""

from __future__ import annotations

import re

# currency -> (adjectives or countries that qualify its unit, the unit's names)
_QUALIFIED: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "USD": (("us", "u s", "united states", "american"), ("dollar",)),
    "CAD": (("canadian",), ("dollar",)), "AUD": (("australian",), ("dollar",)),
    "NZD": (("new zealand",), ("dollar",)), "HKD": (("hong kong",), ("dollar",)),
    "SGD": (("singapore", "singaporean"), ("dollar",)), "TWD": (("taiwan", "new taiwan", "taiwanese"), ("dollar",)),
    "MXN": (("mexican",), ("peso",)), "ARS": (("argentine", "argentinian"), ("peso",)),
    "CLP": (("chilean",), ("peso",)), "COP": (("colombian",), ("peso",)), "PHP": (("philippine",), ("peso",)),
    "CHF": (("swiss",), ("franc",)), "JPY": (("japanese",), ("yen",)),
    "KRW": (("korean", "south korean"), ("won",)), "INR": (("indian",), ("rupee",)),
    "CNY": (("chinese",), ("yuan", "renminbi")), "GBP": (("british", "uk"), ("pound", "pound sterling")),
    "EGP": (("egyptian",), ("pound",)), "SEK": (("swedish",), ("krona", "kronor")),
    "NOK": (("norwegian",), ("krone", "kroner")), "DKK": (("danish",), ("krone", "kroner")),
    "ISK": (("icelandic",), ("krona", "kronur")), "PLN": (("polish",), ("zloty", "złoty", "zlotys", "zlotych")),
    "CZK": (("czech",), ("koruna", "crown")), "HUF": (("hungarian",), ("forint",)),
    "RUB": (("russian",), ("ruble", "rouble")), "TRY": (("turkish",), ("lira",)),
    "BRL": (("brazilian",), ("real", "reais")), "ZAR": (("south african",), ("rand",)),
    "THB": (("thai",), ("baht",)), "IDR": (("indonesian",), ("rupiah",)), "MYR": (("malaysian",), ("ringgit",)),
    "VND": (("vietnamese",), ("dong",)), "ILS": (("israeli", "israeli new"), ("shekel", "new shekel", "sheqel")),
    "AED": (("uae", "emirati", "emirates"), ("dirham",)), "SAR": (("saudi", "saudi arabian"), ("riyal",)),
    "QAR": (("qatari",), ("riyal", "rial")), "OMR": (("omani",), ("rial", "riyal")),
    "KWD": (("kuwaiti",), ("dinar",)), "BHD": (("bahraini",), ("dinar",)), "JOD": (("jordanian",), ("dinar",)),
    "TND": (("tunisian",), ("dinar",)), "LYD": (("libyan",), ("dinar",)), "IQD": (("iraqi",), ("dinar",)),
    "NGN": (("nigerian",), ("naira",)), "KES": (("kenyan",), ("shilling",)), "PEN": (("peruvian",), ("sol",)),
    "UAH": (("ukrainian",), ("hryvnia",)), "RON": (("romanian",), ("leu", "lei")), "BGN": (("bulgarian",), ("lev",)),
}
# a unit word alone: one currency, or a shared symbol; the rest name none alone
_ALONE = {"euro": "EUR", "euros": "EUR", "dollar": "$", "dollars": "$", "pound": "£", "pounds": "£",
          "sterling": "GBP", "pound sterling": "GBP", "pounds sterling": "GBP", "yen": "JPY", "won": "KRW",
          "rupee": "INR", "rupees": "INR", "yuan": "CNY", "renminbi": "CNY", "franc": "CHF", "francs": "CHF",
          "krona": "kr", "krone": "kr", "kronor": "kr", "kroner": "kr", "zloty": "PLN", "złoty": "PLN",
          "forint": "HUF", "forints": "HUF", "koruna": "CZK", "baht": "THB", "ringgit": "MYR", "rupiah": "IDR",
          "shekel": "ILS", "shekels": "ILS", "naira": "NGN", "hryvnia": "UAH", "ruble": "RUB", "rubles": "RUB",
          "rouble": "RUB", "roubles": "RUB", "lira": "TRY", "reais": "BRL"}
_EURO = "germany france italy spain netherlands belgium austria ireland portugal finland greece luxembourg " \
        "slovakia slovenia estonia latvia lithuania malta cyprus croatia eurozone"
_COUNTRIES: dict[str, str] = {
    **{c: "EUR" for c in _EURO.split()}, "euro area": "EUR", "the euro area": "EUR", "the eurozone": "EUR",
    "canada": "CAD", "united states": "USD", "the united states": "USD", "usa": "USD", "us": "USD",
    "the us": "USD", "america": "USD", "switzerland": "CHF", "japan": "JPY", "korea": "KRW",
    "south korea": "KRW", "india": "INR", "china": "CNY", "united kingdom": "GBP", "the united kingdom": "GBP",
    "uk": "GBP", "the uk": "GBP", "britain": "GBP", "great britain": "GBP", "australia": "AUD",
    "new zealand": "NZD", "hong kong": "HKD", "singapore": "SGD", "sweden": "SEK", "norway": "NOK",
    "denmark": "DKK", "iceland": "ISK", "poland": "PLN", "czech republic": "CZK", "the czech republic": "CZK",
    "czechia": "CZK", "hungary": "HUF", "russia": "RUB", "turkey": "TRY", "türkiye": "TRY", "brazil": "BRL",
    "mexico": "MXN", "south africa": "ZAR", "taiwan": "TWD", "thailand": "THB", "indonesia": "IDR",
    "malaysia": "MYR", "the philippines": "PHP", "philippines": "PHP", "vietnam": "VND", "israel": "ILS",
    "uae": "AED", "the uae": "AED", "united arab emirates": "AED", "the united arab emirates": "AED",
    "saudi arabia": "SAR", "qatar": "QAR", "kuwait": "KWD", "bahrain": "BHD", "oman": "OMR",
    "jordan": "JOD", "tunisia": "TND", "libya": "LYD", "iraq": "IQD", "egypt": "EGP", "nigeria": "NGN",
    "kenya": "KES", "argentina": "ARS", "chile": "CLP", "colombia": "COP", "peru": "PEN",
    "ukraine": "UAH", "romania": "RON", "bulgaria": "BGN",
}


def _plurals(unit: str) -> tuple[str, ...]:
    return (unit,) if unit.endswith(("s", "i", "a", "won", "yen", "yuan", "renminbi", "baht", "rand", "ringgit",
                                     "rupiah", "naira", "dong", "lev", "leu", "koruna")) else (unit, unit + "s")


_NAMES: dict[str, str] = dict(_ALONE)
for _code, (_adjs, _units) in _QUALIFIED.items():
    for _adj in _adjs:
        for _unit in _units:
            for _form in _plurals(_unit):
                _NAMES[f"{_adj} {_form}"] = _code
# an adjective names its currency only before "currency" ("Swiss currency", not "Swiss supplier"); no "us"/"uk"
_ADJECTIVES = {a: code for code, (adjs, _) in _QUALIFIED.items() for a in adjs if a not in ("us", "uk", "u s")}
_FIRST = frozenset(k.split()[0] for k in _NAMES)
_COUNTRY_FIRST = frozenset(k.split()[0] for k in _COUNTRIES)
_ABOUT = frozenset({"currency", "currencies", "money"})
_LONGEST = max(len(k.split()) for k in (*_NAMES, *_COUNTRIES))
_WORD = re.compile(r"[^\W\d_]+")
# the words before a country that make it a currency's country: "the currency of (the) Canada"
_BEFORE = {("currency", "of"), ("currency", "in"), ("currency", "for"), ("used", "in"), ("money", "of"),
           ("currencies", "of"), ("currency", "used")}
_AFTER = {("currency",), ("s", "currency"), ("national", "currency"), ("s", "national"), ("s", "official")}
# CJK and Korean names
_CJK = re.compile(r"人民币|人民幣|美元|欧元|歐元|日元|日圓|韩元|韓元|英镑|英鎊|港元|港币|港幣|원화|달러|유로")
_CJK_CODES = {"人民币": "CNY", "人民幣": "CNY", "美元": "USD", "欧元": "EUR", "歐元": "EUR", "日元": "JPY",
              "日圓": "JPY", "韩元": "KRW", "韓元": "KRW", "英镑": "GBP", "英鎊": "GBP", "港元": "HKD", "港币": "HKD",
              "港幣": "HKD", "원화": "KRW", "달러": "$", "유로": "EUR"}


def currency_words(text: str) -> list[tuple[int, str, str]]:
    """(where, as written, ISO code or shared symbol) for each currency named in words."""
    out = [(m.start(), m.group(), _CJK_CODES[m.group()]) for m in _CJK.finditer(text)] if not text.isascii() else []
    low = text.lower()
    found = _WORD.findall(low)
    if _FIRST.isdisjoint(found) and (_ABOUT.isdisjoint(found) or _COUNTRY_FIRST.isdisjoint(found)):
        return out  # the common case: no word that can start a name
    words = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(low)]
    i = 0
    while i < len(words):
        for n in range(min(_LONGEST, len(words) - i), 0, -1):
            key = " ".join(w for _, _, w in words[i:i + n])
            code = _NAMES.get(key)
            if code is None and key in _COUNTRIES and _about_currency(words, i, n):
                code = _COUNTRIES[key]
            if code is None and key in _ADJECTIVES and words[i + n:i + n + 1] and words[i + n][2] in _ABOUT:
                code = _ADJECTIVES[key]
            if code is not None:
                out.append((words[i][0], text[words[i][0]:words[i + n - 1][1]], code))
                i += n
                break
        else:
            i += 1
    return sorted(out)


def _about_currency(words: list[tuple[int, int, str]], i: int, n: int) -> bool:
    before = tuple(w for _, _, w in words[max(0, i - 2):i])
    after = tuple(w for _, _, w in words[i + n:i + n + 2])
    return before in _BEFORE or after[:1] in _AFTER or after in _AFTER


__all__ = ["currency_words"]
