"""Currencies: ISO codes, symbols and words; a shared symbol ("$") is resolved against the other side."""

from __future__ import annotations

import re

from evalrun.values.currency_names import currency_words

ISO_CODES = (
    "EUR USD GBP CHF JPY CNY RMB INR CAD AUD NZD HKD SGD SEK NOK DKK PLN CZK HUF RUB "
    "TRY BRL MXN ZAR KRW TWD THB IDR MYR PHP VND ILS AED SAR QAR KWD BHD OMR JOD TND "
    "LYD IQD EGP NGN KES ARS CLP COP PEN UAH RON BGN ISK "
    # other active ISO 4217 codes; not capitalised everyday words (ALL, TOP, CUP, MOP, BOB, GEL, SOS) or units
    "IRR PKR BDT LKR NPR MAD DZD LBP SYP YER AFN KZT UZS AZN AMD BYN MDL RSD MKD BAM "
    "ETB GHS TZS UGX ZMW XOF XAF MUR BWP NAD MZN AOA DOP GTQ CRC UYU PYG VES JMD TTD "
    "BSD XCD FJD PGK MMK KHR LAK MNT BND MVR HNL NIO SCR RWF"
).split()
# three minor digits: "KWD 12.500" is 12.5; not IQD, which ISO lists but amounts write in whole dinars
THREE_DECIMAL = frozenset("KWD BHD OMR JOD TND LYD".split())
# A symbol shared by several currencies -> the currencies it can stand for.
SHARED = {"$": frozenset("USD CAD AUD NZD HKD SGD MXN TWD ARS CLP COP".split()),
          "kr": frozenset("SEK NOK DKK ISK".split()), "¥": frozenset("JPY CNY".split()),
          "£": frozenset("GBP EGP".split())}
_SYMBOLS = {"$": "$", "US$": "USD", "€": "EUR", "£": "£", "¥": "¥", "₹": "INR", "₩": "KRW", "₽": "RUB", "₺": "TRY",
            "₪": "ILS", "₫": "VND", "฿": "THB", "₴": "UAH", "₦": "NGN", "₱": "PHP", "C$": "CAD", "CA$": "CAD",
            "A$": "AUD", "AU$": "AUD", "HK$": "HKD", "NZ$": "NZD", "S$": "SGD", "R$": "BRL", "NT$": "TWD",
            "MX$": "MXN", "円": "JPY", "元": "CNY", "zł": "PLN", "Kč": "CZK", "Rs": "INR", "Rs.": "INR", "RMB": "CNY",
            "kr": "kr", "kr.": "kr", "Fr.": "CHF", "SFr.": "CHF", "sfr.": "CHF", "R": "ZAR", "euro": "EUR",
            "euros": "EUR", "dollar": "$", "dollars": "$", "yen": "JPY", "pound": "£", "pounds": "£", "krona": "kr",
            "krone": "kr", "kronor": "kr", "kroner": "kr", "원": "KRW", "won": "KRW"}


def currency_code(tok: str | None) -> str | None:
    """The ISO code a written currency names, the shared symbol when it stands for several, or None."""
    if not tok:
        return None
    if tok in _SYMBOLS:
        return _SYMBOLS[tok]
    low = tok.lower()
    if low in _SYMBOLS:
        return _SYMBOLS[low]
    return tok.upper() if tok.upper() in ISO_CODES else None


def _members(cur: str) -> frozenset[str]:
    return SHARED.get(cur) or frozenset((cur,))


def same_currency(a: str, b: str) -> bool:
    """Can `a` and `b` name the same currency? A shared symbol matches its members."""
    return a == b or bool(_members(a) & _members(b))


def more_specific(a: str, b: str) -> str:
    """Of two compatible currencies, the one that names a single currency."""
    return b if a in SHARED else a


_MENTION = re.compile(r"(?<![A-Za-z])[A-Z]{3}(?![A-Za-z])|[$€£¥₹₩₽₺₪₫฿₴₦₱円元원]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")


def _korean_won(text: str, at: int) -> bool:
    """Is the 원 at `at` the currency: after a number, or not inside a word (직원, 회원)?"""
    before = text[max(0, at - 2):at]
    if before[-1:].isdigit() or (before[-1:] == " " and before[:1].isdigit()):
        return True
    return not (_HANGUL.match(before[-1:]) or _HANGUL.match(text[at + 1:at + 2]))


def currency_mentions(text: str, words: bool = False, everyday: bool = True) -> list[tuple[str, str]]:
    """(as written, ISO code or shared symbol) for each currency named, in order: codes in capitals ("try" is a
    word), symbols, and with `words` names (currency_names); without `everyday`, not "won" (also a verb)."""
    return [(tok, cur) for _, tok, cur in currency_mentions_at(text, words, everyday)]


def currency_mentions_at(text: str, words: bool = False, everyday: bool = True) -> list[tuple[int, str, str]]:
    """As currency_mentions, each with where it starts."""
    found = [(m.start(), m.group(), cur) for m in _MENTION.finditer(text)
             if (m.group() != "원" or _korean_won(text, m.start())) and (cur := currency_code(m.group())) is not None
             and (len(m.group()) != 3 or not m.group().isupper() or m.group() in ISO_CODES)]
    if words:  # a name in words may be three capitals that are no code ("the currency of UAE")
        named = [w for w in currency_words(text) if everyday or w[1].lower() != "won"]
        found = sorted(found + named, key=lambda f: (f[0], f[1]))
    return found


def _data_row(line: str) -> bool:
    """A data row: 3+ cells split by , ; | or tab with no space after (prose puts one; digits group a number)."""
    cuts = [i for i, ch in enumerate(line) if ch in ",;|\t"
            and not (line[i - 1:i].isdigit() and line[i + 1:i + 2].isdigit())]
    return len(cuts) >= 2 and all(line[i + 1:i + 2] not in (" ", "") for i in cuts)


def stated_currency(text: str) -> str | None:
    """The one currency an answer names apart from its amount ("2,318.64. The currency is USD."), else None;
    one inside a data row the answer copies states nothing about its value."""
    found: list[str] = []
    mentions = currency_mentions(text, words=True, everyday=False)
    if mentions and any(ch in text for ch in ",;|\t"):
        prose = "\n".join(" " * len(line) if _data_row(line) else line for line in text.split("\n"))
        if prose != text:
            mentions = currency_mentions(prose, words=True, everyday=False)
    for _, cur in mentions:
        for i, seen in enumerate(found):
            if same_currency(seen, cur):
                found[i] = more_specific(seen, cur)
                break
        else:
            found.append(cur)
    return found[0] if len(found) == 1 else None
