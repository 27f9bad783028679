"""Long-document key-field extraction: invoices, service contracts, annual statements.

Each generated document carries the typed fields a business extracts, the
distractors that make extraction hard in practice (subtotal vs total, last
year's figures, an earlier invoice number, an amount one digit away from the
total, a date next to the due date) and at least one decoy field it does not
contain. It is padded with digit-free clauses to a length measured in the
model's tokens, with the facts at recorded depths, because lossy KV methods
drop exactly such details from the middle of long contexts.

A document's facts depend on (seed, document index) only, so the same document
is seen at every target length and length effects are not confounded with
value difficulty; the padding and the fact depths depend on the length too.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field as dc_field
from decimal import ROUND_HALF_UP, Decimal
from typing import Callable, Literal

from pydantic import Field as PydField, field_validator, model_validator

from evalrun.contract.types import Field, Item
from evalrun.tasks import register
from evalrun.tasks import doc_text as T
from evalrun.tasks.base import PackParams, PackSpec, TokenCounter

# how models name currencies in free text; the scorer maps these to the ISO code
CURRENCY_SYNONYMS = {"€": "EUR", "euro": "EUR", "euros": "EUR", "$": "USD", "us dollar": "USD", "us dollars": "USD",
                     "dollar": "USD", "dollars": "USD", "£": "GBP", "pound": "GBP", "pounds": "GBP",
                     "pound sterling": "GBP", "swiss franc": "CHF", "swiss francs": "CHF", "francs": "CHF"}

NAME = "doc_fields"
VERSION = "1"

DocType = Literal["invoice", "contract", "financial_statement"]
Mode = Literal["per_field", "json"]

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
JSON_MIN_LENGTH = 600  # the largest documents need about 540 tokens for their facts and the key list
MAX_DECOYS = min(len(v) for v in OPTIONAL.values())
ALL_FIELDS = sorted({f for d in (CORE, OPTIONAL) for names in d.values() for f in names})
_TAX_RATES = {"EUR": ["19", "20", "21"], "GBP": ["20"], "CHF": ["8.1"], "USD": ["21", "23"]}
_CENT = Decimal("0.01")


class DocFieldsParams(PackParams):
    documents: int = 6
    doc_types: list[DocType] = PydField(default_factory=lambda: ["invoice", "contract", "financial_statement"],
                                        min_length=1)
    lengths: list[int] = PydField(default_factory=lambda: [600], min_length=1)
    mode: Mode = "per_field"
    fields: list[str] | None = None
    decoys: int = 1

    @field_validator("documents")
    @classmethod
    def _documents(cls, v: int) -> int:
        if not 1 <= v <= 10_000:
            raise ValueError("documents must be between 1 and 10000")
        return v

    @field_validator("lengths")
    @classmethod
    def _lengths(cls, v: list[int]) -> list[int]:
        if any(n < 400 or n > 1_000_000 for n in v):
            raise ValueError("each length must be between 400 and 1000000 tokens")
        return v

    @field_validator("fields")
    @classmethod
    def _fields(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v
        if not v:
            raise ValueError("fields must name at least one field (or be omitted for all)")
        unknown = [f for f in v if f not in T.FIELD_INFO]
        if unknown:
            raise ValueError(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(ALL_FIELDS)}")
        return v

    @field_validator("decoys")
    @classmethod
    def _decoys(cls, v: int) -> int:
        if not 0 <= v <= MAX_DECOYS:
            raise ValueError(f"decoys must be between 0 and {MAX_DECOYS}")
        return v

    @model_validator(mode="after")
    def _json_room(self) -> DocFieldsParams:
        # the key list and all facts must fit before any padding; checked here, not per seed at build time
        if self.mode == "json" and min(self.lengths) < JSON_MIN_LENGTH:
            raise ValueError(f"json mode needs lengths of at least {JSON_MIN_LENGTH} tokens")
        return self


@dataclass
class _Fact:
    name: str
    kind: str
    gold: str | None  # None: a decoy the document does not contain
    line: str | None  # the sentence that states it


@dataclass
class _Doc:
    """A document's content before layout: facts, distractors and how they group."""

    doc_id: str
    doc_type: str
    rng: random.Random
    currency: str
    amount_style: str
    date_style: str
    facts: dict[str, _Fact] = dc_field(default_factory=dict)
    distractors: dict[str, str] = dc_field(default_factory=dict)
    blocks: list[tuple[str, list[str]]] = dc_field(default_factory=list)  # (heading, fact/distractor keys)
    absent: set[str] = dc_field(default_factory=set)  # decoy fields: their words never appear
    used: set[str] = dc_field(default_factory=set)  # canonical values already placed

    def fresh(self, make: Callable[[], object], key: Callable[[object], str] = str) -> object:
        """A value not yet in the document, so no distractor ever repeats a gold."""
        while True:
            v = make()
            if key(v) not in self.used:
                self.used.add(key(v))
                return v

    def amount(self, make: Callable[[], Decimal], whole: bool = False) -> Decimal:
        """A fresh amount with cents, or in whole units (as statements print them)."""
        q = Decimal(1) if whole else _CENT
        value = self.fresh(lambda: make().quantize(q, ROUND_HALF_UP), lambda d: f"a{d.normalize()}")  # type: ignore[attr-defined]
        return value  # type: ignore[return-value]

    def keep(self, v: Decimal) -> Decimal:
        """Register a value derived from others (tax, total): no redraw is possible."""
        self.used.add(f"a{v.normalize()}")
        return v

    def show(self, v: object) -> str:
        if isinstance(v, Decimal):
            return T.render_amount(v, self.currency, self.amount_style, _cents(v))
        if isinstance(v, dt.date):
            return T.render_date(v, self.date_style)
        return str(v)

    def _line(self, templates: list[str], shown: str, **kw: str) -> str:
        return self.rng.choice(templates).format(v=shown, **kw).replace("..", ".")

    def fact(self, name: str, v: object, **kw: str) -> None:
        kind = T.FIELD_INFO[name][0]
        if kind == "amount":
            gold = T.gold_amount(v, self.currency, _cents(v))  # type: ignore[arg-type]
        else:
            gold = v.isoformat() if isinstance(v, dt.date) else str(v)
        self.facts[name] = _Fact(name, kind, gold, self._line(T.FIELD_LINES[name], self.show(v), **kw))

    def distractor(self, kind: str, v: object, **kw: str) -> None:
        self.distractors[kind] = self._line(T.DISTRACTOR_LINES[kind], self.show(v), **kw)


def _cents(v: Decimal) -> bool:
    return int(v.as_tuple().exponent) < 0


def _date(rng: random.Random, d: _Doc, lo: dt.date, span_days: int) -> dt.date:
    return d.fresh(lambda: lo + dt.timedelta(days=rng.randint(0, span_days)), lambda x: f"d{x}")  # type: ignore[return-value]


def _commercial_options(d: _Doc, opt: set[str], country: str) -> None:
    rng = d.rng
    if "purchase_order_number" in opt:
        d.fact("purchase_order_number", f"PO-{rng.randint(10000, 99999)}")
    if "late_fee" in opt:
        d.fact("late_fee", d.amount(lambda: T.money(rng, 10, 95)))
    if "vat_id" in opt:
        d.fact("vat_id", T.vat_id(rng, country))


def _invoice(d: _Doc, opt: set[str]) -> None:
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


def _contract(d: _Doc, opt: set[str]) -> None:
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


def _statement(d: _Doc, opt: set[str]) -> None:
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


def make_doc(doc_type: str, index: int, seed: int, decoys: int) -> tuple[_Doc, list[_Fact]]:
    """The document's content and its fields in a fixed order (decoys in their place)."""
    rng = random.Random(f"{NAME}:{VERSION}:{seed}:{index}")
    cur = rng.choice(T.CURRENCIES)
    d = _Doc(f"{doc_type}-{index}", doc_type, rng, cur, rng.choice(T.AMOUNT_STYLES), rng.choice(T.DATE_STYLES))
    pool = OPTIONAL[doc_type]
    d.absent = set(rng.sample(pool, decoys))
    present = {f for f in pool if f not in d.absent and rng.random() < 0.5}
    _WRITERS[doc_type](d, present)
    order = CORE[doc_type] + pool
    facts = [d.facts.get(n) or _Fact(n, T.FIELD_INFO[n][0], None, None) for n in order if n in d.facts or n in d.absent]
    return d, facts


# ----------------------------------------------------------------- layout and items


def _layout(d: _Doc, length: int, seed: int, budget: int, count: TokenCounter) -> tuple[str, dict[str, tuple[float, str]]]:
    """The document text, and for every placed fact or distractor key its
    (relative depth, sentence). Field groups take shuffled, evenly spaced slots
    so that some facts sit near the start, some in the middle, some at the end."""
    text = {**d.distractors, **{n: f.line for n, f in d.facts.items()}}

    def render(group: tuple[str | None, list[str]]) -> str:
        head, keys = group
        return "\n\n" + (f"{head}\n" if head else "") + "\n".join(text[k] for k in keys)  # type: ignore[misc]

    kept = list(d.distractors)  # most important first: short contexts keep only the first ones
    while True:
        blocks = [(h, [k for k in keys if k in d.facts or k in kept]) for h, keys in d.blocks]
        in_block = {k for _, keys in d.blocks for k in keys}
        fields = blocks + [(None, [n]) for n in d.facts if n not in in_block]
        loose = [(None, [k]) for k in kept if k not in in_block]
        fixed = sum(count(render(g)) for g in fields + loose)
        if fixed <= budget or not kept:
            break
        kept.pop()
    if fixed > budget:
        raise ValueError(f"{NAME}: a length of {length} tokens is too short for document {d.doc_id} "
                         f"(its facts alone need about {length - budget + fixed} tokens)")
    rng = random.Random(f"{NAME}:{VERSION}:{seed}:{d.doc_id}:{length}")
    rng.shuffle(fields)
    groups = [((k + rng.uniform(0.2, 0.8)) / len(fields), g) for k, g in enumerate(fields)]
    groups += [(rng.random(), g) for g in loose]
    units, starts, before, filled = T.filler(rng, d.doc_type, sorted(d.absent), budget - fixed, count)
    bounds = [*before, max(1, filled)]  # token position of each place a group can go
    slots: dict[int, list[tuple[float, tuple[str | None, list[str]]]]] = {}
    for depth, g in groups:
        b = min(range(len(bounds)), key=lambda i: (abs(bounds[i] / bounds[-1] - depth), i))
        slots.setdefault(b, []).append((depth, g))
    cut = [*starts, len(units)]
    out = [T.TITLES[d.doc_type]]
    where: dict[str, tuple[int, str]] = {}
    size = len(out[0])
    for b in range(len(cut)):
        for _, g in sorted(slots.get(b, []), key=lambda x: x[0]):
            piece = render(g)
            for k in g[1]:
                where[k] = (size + piece.index(text[k]), text[k])  # type: ignore[arg-type]
            out.append(piece)
            size += len(piece)
        section = "".join(units[cut[b] : cut[b + 1]]) if b + 1 < len(cut) else ""
        out.append(section)
        size += len(section)
    doc = "".join(out)
    return doc, {k: (round(pos / len(doc), 3), s) for k, (pos, s) in where.items()}


def _items(d: _Doc, asked: list[_Fact], length: int, params: DocFieldsParams, count: TokenCounter) -> list[Item]:
    noun = T.NOUNS[d.doc_type]
    if params.mode == "json":
        intro = f"Read the {noun} below and extract the fields listed after it."
        tails = {"": T.json_request([f.name for f in asked])}
    else:
        intro = f"Read the {noun} below and answer the question after it."
        tails = {f.name: T.question(d.doc_type, f.name) for f in asked}
    longest = max(tails.values(), key=lambda t: count(f"\n\n{t}"))
    budget = length - count(f"{intro}\n\n{T.TITLES[d.doc_type]}") - count(f"\n\n{longest}")
    for _ in range(8):  # the sum of piece counts can differ a little from the whole: trim until it fits
        doc, placed = _layout(d, length, params.seed, budget, count)
        over = count(f"{intro}\n\n{doc}\n\n{longest}") - length
        if over <= 0:
            break
        budget -= over + 2
    else:
        raise ValueError(f"{NAME}: cannot fit document {d.doc_id} into {length} tokens")
    distractors = [{"kind": k, "depth": placed[k][0], "sentence": placed[k][1]} for k in d.distractors if k in placed]
    base = {"doc_id": d.doc_id, "doc_type": d.doc_type, "target_tokens": length, "mode": params.mode,
            "amount_style": d.amount_style, "date_style": d.date_style, "distractors": distractors}
    cell = f"{NAME}/{d.doc_id}-L{length}"

    def field(f: _Fact) -> Field:
        opts = {"allowed": list(T.CURRENCIES), "synonyms": dict(CURRENCY_SYNONYMS)} if f.kind == "enum" else {}
        return Field(name=f.name, kind=f.kind, gold=f.gold, options=opts)  # type: ignore[arg-type]

    def where(f: _Fact) -> dict[str, object]:
        depth, source = placed[f.name] if f.gold is not None else (None, None)
        return {"depth": depth, "source": source}

    items: list[Item] = []
    if params.mode == "json":
        prompt = f"{intro}\n\n{doc}\n\n{tails['']}"
        meta = {**base, "answer_format": "json", "context_tokens": count(prompt), "question": tails[""],
                "fields": {f.name: where(f) for f in asked}}
        return [Item(id=cell, pack=NAME, prompt=prompt, fields=[field(f) for f in asked], meta=meta)]
    for f in asked:
        prompt = f"{intro}\n\n{doc}\n\n{tails[f.name]}"
        w = where(f)
        meta = {**base, "answer_format": "text", "context_tokens": count(prompt), "question": tails[f.name],
                "field": f.name,
                "decoy": f.gold is None, "field_depth": w["depth"], "source": w["source"]}
        items.append(Item(id=f"{cell}/{f.name}", pack=NAME, prompt=prompt, fields=[field(f)], meta=meta))
    return items


def build(params: DocFieldsParams, count: TokenCounter) -> list[Item]:
    items: list[Item] = []
    for index in range(params.documents):
        doc_type = params.doc_types[index % len(params.doc_types)]
        d, facts = make_doc(doc_type, index, params.seed, params.decoys)
        asked = [f for f in facts if params.fields is None or f.name in params.fields]
        if not asked:
            continue
        for length in params.lengths:
            items.extend(_items(d, asked, length, params, count))
    return items


SPEC = register(
    PackSpec(
        name=NAME,
        version=VERSION,
        params=DocFieldsParams,
        build=build,  # type: ignore[arg-type]
        description=(
            "Key-field extraction from long generated invoices, service contracts and annual statements, with "
            "near-miss distractors and absent decoy fields; one question per field or one JSON object."
        ),
    )
)
