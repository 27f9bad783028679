"""One document's facts, distractors and decoys, by (seed, index) only: the same document at every length."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field as dc_field
from decimal import ROUND_HALF_UP, Decimal
from typing import Callable, TypeVar

import evalrun.tasks.doc_fields._text as T

V = TypeVar("V")

# Fields every document of a type has, then the optional ones: each optional
# field is a decoy (absent, gold None) in some documents and present in others.
CORE: dict[str, list[str]] = {
    "invoice": ["invoice_number", "issue_date", "due_date", "supplier", "customer", "subtotal", "tax", "total",
                "currency", "iban"],
    "contract": ["contract_number", "provider", "client", "start_date", "term_months", "monthly_fee",
                 "notice_period_days", "invoice_number", "total", "due_date", "iban", "currency"],
    "financial_statement": ["company", "fiscal_year", "revenue", "prior_year_revenue", "net_income", "total_assets",
                            "auditor", "approval_date", "currency"],
}
OPTIONAL: dict[str, list[str]] = {
    "invoice": ["purchase_order_number", "discount", "late_fee", "vat_id", "delivery_date"],
    "contract": ["purchase_order_number", "setup_fee", "late_fee", "vat_id"],
    "financial_statement": ["dividend_per_share", "employees", "research_expense", "vat_id"],
}
MAX_DECOYS = min(len(v) for v in OPTIONAL.values())
ALL_FIELDS = sorted({f for d in (CORE, OPTIONAL) for names in d.values() for f in names})
_TAX_RATES = {"EUR": ["19", "20", "21"], "GBP": ["20"], "CHF": ["8.1"], "USD": ["21", "23"]}
_CENT = Decimal("0.01")


@dataclass
class Fact:
    name: str
    kind: str
    gold: str | None  # None: a decoy the document does not contain
    line: str | None  # the sentence that states it


@dataclass
class Doc:
    """A document's content before layout: facts, distractors and how they group."""

    doc_id: str
    doc_type: str
    rng: random.Random
    currency: str
    amount_style: str
    date_style: str
    facts: dict[str, Fact] = dc_field(default_factory=dict)
    distractors: dict[str, str] = dc_field(default_factory=dict)
    blocks: list[tuple[str, list[str]]] = dc_field(default_factory=list)  # (heading, fact/distractor keys)
    absent: set[str] = dc_field(default_factory=set)  # decoy fields: their words never appear
    used: set[str] = dc_field(default_factory=set)  # canonical values already placed

    def fresh(self, make: Callable[[], V], key: Callable[[V], str] = str) -> V:
        """A value not yet in the document, so no distractor ever repeats a gold."""
        while True:
            v = make()
            if key(v) not in self.used:
                self.used.add(key(v))
                return v

    def amount(self, make: Callable[[], Decimal], whole: bool = False) -> Decimal:
        """A fresh amount with cents, or in whole units (as statements print them)."""
        q = Decimal(1) if whole else _CENT
        return self.fresh(lambda: make().quantize(q, ROUND_HALF_UP), lambda d: f"a{d.normalize()}")

    def keep(self, v: Decimal) -> Decimal:
        """Register a value derived from others (tax, total): no redraw is possible."""
        self.used.add(f"a{v.normalize()}")
        return v

    def show(self, v: object) -> str:
        if isinstance(v, Decimal):
            return T.render_amount(v, self.currency, self.amount_style, _cents(v))
        return T.render_date(v, self.date_style) if isinstance(v, dt.date) else str(v)

    def _line(self, templates: list[str], shown: str, **kw: str) -> str:
        return self.rng.choice(templates).format(v=shown, **kw).replace("..", ".")

    def fact(self, name: str, v: object, **kw: str) -> None:
        """A fact's gold as its value is held: an amount (the only Decimal facts) with its currency."""
        if isinstance(v, Decimal):
            gold = T.gold_amount(v, self.currency, _cents(v))
        else:
            gold = v.isoformat() if isinstance(v, dt.date) else str(v)
        self.facts[name] = Fact(name, T.FIELD_INFO[name][0], gold, self._line(T.FIELD_LINES[name], self.show(v), **kw))

    def distractor(self, kind: str, v: object, **kw: str) -> None:
        self.distractors[kind] = self._line(T.DISTRACTOR_LINES[kind], self.show(v), **kw)


def _cents(v: Decimal) -> bool:
    return int(v.as_tuple().exponent) < 0


def _date(rng: random.Random, d: Doc, lo: dt.date, span_days: int) -> dt.date:
    return d.fresh(lambda: lo + dt.timedelta(days=rng.randint(0, span_days)), lambda x: f"d{x}")


def _commercial_options(d: Doc, opt: set[str], country: str) -> None:
    rng = d.rng
    if "purchase_order_number" in opt:
        d.fact("purchase_order_number", f"PO-{rng.randint(10000, 99999)}")
    if "late_fee" in opt:
        d.fact("late_fee", d.amount(lambda: T.money(rng, 10, 95)))
    if "vat_id" in opt:
        d.fact("vat_id", T.vat_id(rng, country))


def _invoice(d: Doc, opt: set[str]) -> None:
    rng, cur = d.rng, d.currency
    country = rng.choice(T.COUNTRIES_BY_CURRENCY[cur])
    names: set[str] = set()
    issue = _date(rng, d, dt.date(2022, 1, 3), 1000)
    due = _date(rng, d, issue + dt.timedelta(days=14), 46)
    d.fact("invoice_number", f"INV-{issue.year}-{rng.randint(1000, 999999):06d}")
    d.fact("issue_date", issue)
    d.fact("due_date", due)
    d.fact("supplier", T.company(rng, country, names))
    d.fact("customer", T.company(rng, rng.choice(T.COUNTRIES_BY_CURRENCY[cur]), names))
    rate = rng.choice(_TAX_RATES[cur])
    subtotal = d.amount(lambda: T.money(rng, 800, 90_000))
    net = subtotal
    if "discount" in opt:
        disc = d.keep((subtotal * rng.choice([2, 3, 5]) / 100).quantize(_CENT, ROUND_HALF_UP))
        d.fact("discount", disc)
        net = subtotal - disc
    tax = d.keep((net * Decimal(rate) / 100).quantize(_CENT, ROUND_HALF_UP))
    total = d.keep(net + tax)
    d.fact("subtotal", subtotal)
    d.fact("tax", tax, rate=f"{rate}%")
    d.fact("total", total)
    d.fact("currency", cur, cname=T.CURRENCY_NAMES[cur])
    account = T.iban(rng, country)
    d.fact("iban", account)
    _commercial_options(d, opt, country)
    if "delivery_date" in opt:
        d.fact("delivery_date", _date(rng, d, issue - dt.timedelta(days=12), 10))
    d.distractor("ref_invoice", f"INV-{issue.year - 1}-{rng.randint(1000, 999999):06d}")
    d.distractor("prior_total", d.amount(lambda: total * Decimal(rng.uniform(0.7, 1.3))))
    d.distractor("credit_note", d.amount(lambda: T.one_digit_off(rng, total)))
    d.distractor("reminder_date", _date(rng, d, due + dt.timedelta(days=5), 10))
    d.distractor("old_iban", T.iban(rng, account[:2]))
    d.distractor("carrier", T.company(rng, country, names))
    d.distractor("address", T.address(rng, country))
    if rng.random() < 0.5:
        keys = ["subtotal", "discount", "tax", "total"]
        d.blocks.append(("Invoice summary", [k for k in keys if k in d.facts]))


def _contract(d: Doc, opt: set[str]) -> None:
    rng, cur = d.rng, d.currency
    country = rng.choice(T.COUNTRIES_BY_CURRENCY[cur])
    names: set[str] = set()
    start = _date(rng, d, dt.date(2022, 1, 3), 1000)
    d.fact("contract_number", f"SC-{start.year}-{rng.randint(1000, 9999)}")
    d.fact("provider", T.company(rng, country, names))
    d.fact("client", T.company(rng, rng.choice(T.COUNTRIES_BY_CURRENCY[cur]), names))
    d.fact("start_date", start)
    terms = rng.sample([12, 18, 24, 36, 48], 2)
    d.fact("term_months", terms[0])
    d.fact("notice_period_days", rng.choice([30, 60, 90]))
    fee = d.amount(lambda: T.money(rng, 400, 20_000))
    d.fact("monthly_fee", fee)
    net = fee * 3
    if "setup_fee" in opt:
        setup = d.amount(lambda: T.money(rng, 250, 5000))
        d.fact("setup_fee", setup)
        net += setup
    rate = rng.choice(_TAX_RATES[cur])
    d.keep(net)
    tax = d.keep((net * Decimal(rate) / 100).quantize(_CENT, ROUND_HALF_UP))
    total = d.keep(net + tax)
    d.fact("invoice_number", f"INV-{start.year}-{rng.randint(1000, 999999):06d}")
    d.fact("total", total)
    d.fact("due_date", _date(rng, d, start + dt.timedelta(days=25), 10))
    account = T.iban(rng, country)
    d.fact("iban", account)
    d.fact("currency", cur, cname=T.CURRENCY_NAMES[cur])
    _commercial_options(d, opt, country)
    d.distractor("net_amount", net)
    d.distractor("tax_amount", tax, rate=f"{rate}%")
    d.distractor("prev_contract", f"SC-{start.year - 2}-{rng.randint(1000, 9999)}")
    d.distractor("prev_fee", d.amount(lambda: fee * Decimal(rng.uniform(0.8, 0.97))))
    d.distractor("prev_term", terms[1])
    d.distractor("signing_date", _date(rng, d, start - dt.timedelta(days=20), 16))
    d.distractor("credit_note", d.amount(lambda: T.one_digit_off(rng, total)))
    d.distractor("subcontractor", T.company(rng, country, names))
    d.blocks.append(("Invoice section", ["invoice_number", "net_amount", "tax_amount", "total", "due_date", "iban"]))


def _statement(d: Doc, opt: set[str]) -> None:
    rng, cur = d.rng, d.currency
    country = rng.choice(T.COUNTRIES_BY_CURRENCY[cur])
    names: set[str] = set()
    year = rng.randint(2018, 2024)
    d.used |= {f"n{year}", f"n{year - 1}"}
    d.fact("company", T.company(rng, country, names))
    d.fact("fiscal_year", year)
    revenue = d.amount(lambda: Decimal(rng.randint(5_000_000, 900_000_000)), whole=True)
    d.fact("revenue", revenue)
    d.fact("prior_year_revenue", d.amount(lambda: revenue * Decimal(rng.uniform(0.8, 1.15)), whole=True))
    net_income = d.amount(lambda: revenue * Decimal(rng.uniform(0.02, 0.15)), whole=True)
    d.fact("net_income", net_income)
    assets = d.amount(lambda: revenue * Decimal(rng.uniform(0.6, 2.0)), whole=True)
    d.fact("total_assets", assets)
    firms: set[str] = set()
    d.fact("auditor", T.audit_firm(rng, firms))
    d.fact("approval_date", _date(rng, d, dt.date(year + 1, 2, 1), 80))
    d.fact("currency", cur, cname=T.CURRENCY_NAMES[cur])
    if "dividend_per_share" in opt:
        d.fact("dividend_per_share", d.amount(lambda: T.money(rng, 0, 4) + Decimal("0.10")))
    if "employees" in opt:
        d.fact("employees", d.fresh(lambda: rng.choice([rng.randint(40, 1900), rng.randint(2100, 25000)]),
                                    lambda n: f"n{n}"))
    if "research_expense" in opt:
        d.fact("research_expense", d.amount(lambda: revenue * Decimal(rng.uniform(0.02, 0.1)), whole=True))
    if "vat_id" in opt:
        d.fact("vat_id", T.vat_id(rng, country))
    d.distractor("prior_net_income", d.amount(lambda: net_income * Decimal(rng.uniform(0.7, 1.3)), whole=True))
    d.distractor("prior_total_assets", d.amount(lambda: assets * Decimal(rng.uniform(0.85, 1.1)), whole=True))
    d.distractor("q4_revenue", d.amount(lambda: revenue * Decimal(rng.uniform(0.22, 0.3)), whole=True))
    d.distractor("revenue_target", d.amount(lambda: revenue * Decimal(rng.uniform(1.05, 1.2)), whole=True))
    d.distractor("prior_year", year - 1)
    d.distractor("prior_approval", _date(rng, d, dt.date(year, 2, 1), 80))
    d.distractor("prior_auditor", T.audit_firm(rng, firms))
    d.distractor("address", T.address(rng, country))
    if rng.random() < 0.5:
        d.blocks.append(("Key figures", ["revenue", "prior_year_revenue", "net_income", "total_assets"]))


_WRITERS = {"invoice": _invoice, "contract": _contract, "financial_statement": _statement}


def make_doc(doc_type: str, index: int, seed: int, decoys: int, stream: str) -> tuple[Doc, list[Fact]]:
    """The document's content and fields in a fixed order, seeded by `stream` ("name:version") and the index."""
    rng = random.Random(f"{stream}:{seed}:{index}")
    cur = rng.choice(T.CURRENCIES)
    d = Doc(f"{doc_type}-{index}", doc_type, rng, cur, rng.choice(T.AMOUNT_STYLES), rng.choice(T.DATE_STYLES))
    pool = OPTIONAL[doc_type]
    d.absent = set(rng.sample(pool, decoys))
    present = {f for f in pool if f not in d.absent and rng.random() < 0.5}
    _WRITERS[doc_type](d, present)
    order = CORE[doc_type] + pool
    facts = [d.facts.get(n) or Fact(n, T.FIELD_INFO[n][0], None, None) for n in order if n in d.facts or n in d.absent]
    return d, facts
