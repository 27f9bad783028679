"""Vocabulary and rendering for the doc_fields pack, apart from its logic so the words can grow on their own."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

# name -> (kind, question label, one-line description for the JSON prompt)
FIELD_INFO: dict[str, tuple[str, str, str]] = {
    "invoice_number": ("id", "invoice number", "invoice number"),
    "issue_date": ("date", "issue date", "date the invoice was issued"),
    "due_date": ("date", "payment due date", "date payment is due"),
    "supplier": ("text", "supplier name", "company that issued the invoice"),
    "customer": ("text", "customer name", "company the invoice is addressed to"),
    "subtotal": ("amount", "subtotal before tax", "net amount before tax"),
    "tax": ("amount", "tax amount", "tax (VAT) amount"),
    "total": ("amount", "total amount due", "total amount due including tax"),
    "currency": ("enum", "currency code", "currency code: EUR, USD, GBP or CHF"),
    "iban": ("id", "IBAN for payment", "IBAN to pay into"),
    "contract_number": ("id", "contract number", "contract number"),
    "provider": ("text", "service provider name", "company that provides the services"),
    "client": ("text", "client name", "company that receives the services"),
    "start_date": ("date", "contract start date", "date the contract starts"),
    "term_months": ("number", "contract term in months", "contract term in months"),
    "monthly_fee": ("amount", "monthly fee", "fee per month before tax"),
    "notice_period_days": ("number", "notice period in days", "notice period in days"),
    "company": ("text", "company name", "company whose statement this is"),
    "fiscal_year": ("number", "fiscal year", "fiscal year covered"),
    "revenue": ("amount", "revenue for the fiscal year", "revenue of the fiscal year"),
    "prior_year_revenue": ("amount", "prior-year revenue", "revenue of the previous year"),
    "net_income": ("amount", "net income", "net income of the fiscal year"),
    "total_assets": ("amount", "total assets", "total assets at year end"),
    "auditor": ("text", "auditor name", "audit firm"),
    "approval_date": ("date", "approval date", "date the statement was approved"),
    # optional fields: present in some documents, decoys (absent, gold None) in others
    "purchase_order_number": ("id", "purchase order number", "purchase order number"),
    "discount": ("amount", "discount amount", "discount granted"),
    "late_fee": ("amount", "late fee", "fee for late payment"),
    "vat_id": ("id", "VAT identification number", "VAT identification number"),
    "delivery_date": ("date", "delivery date", "date the goods were delivered"),
    "setup_fee": ("amount", "setup fee", "one-off setup fee"),
    "dividend_per_share": ("amount", "dividend per share", "dividend per share"),
    "employees": ("number", "number of employees", "number of employees at year end"),
    "research_expense": ("amount", "research and development expenses", "research and development expenses"),
}

# words that would give a decoy field away: no sentence with them where that field is a decoy
DECOY_WORDS: dict[str, tuple[str, ...]] = {
    "purchase_order_number": ("purchase order",),
    "discount": ("discount",),
    "late_fee": ("late fee", "late payment"),
    "vat_id": ("vat identification", "vat id", "vat number", "vat registration"),
    "delivery_date": ("delivery date", "delivered on"),
    "setup_fee": ("setup fee", "set-up fee"),
    "dividend_per_share": ("dividend",),
    "employees": ("employees", "headcount"),
    "research_expense": ("research and development",),
}

CURRENCY_NAMES = {"EUR": "euros", "USD": "US dollars", "GBP": "pounds sterling", "CHF": "Swiss francs"}
CURRENCIES = list(CURRENCY_NAMES)

# One line per placed fact; {v} is the value as rendered in the document.
FIELD_LINES: dict[str, list[str]] = {
    "invoice_number": ["Invoice number: {v}.", "This invoice carries the number {v}.",
                       "Please quote invoice number {v} with your payment."],
    "issue_date": ["Invoice date: {v}.", "This invoice was issued on {v}."],
    "due_date": ["Payment is due on {v}.", "Due date: {v}.", "The invoice must be paid no later than {v}."],
    "supplier": ["Supplier: {v}.", "This invoice is issued by {v}."],
    "customer": ["Bill to: {v}.", "This invoice is addressed to {v}."],
    "subtotal": ["Subtotal before tax: {v}.", "The net amount of the goods and services is {v}."],
    "tax": ["VAT at {rate}: {v}.", "Value added tax of {rate} amounts to {v}."],
    "total": ["Total amount due: {v}.", "The total amount due, including tax, is {v}."],
    "currency": ["All amounts are stated in {cname} ({v}).", "Currency of this document: {v} ({cname})."],
    "iban": ["Please pay by bank transfer to IBAN {v}.", "Bank account (IBAN): {v}."],
    "contract_number": ["Contract number: {v}.", "This service contract is registered under number {v}."],
    "provider": ["Service provider: {v}.", "The services are provided by {v}, the Provider."],
    "client": ["Client: {v}.", "The services are ordered by {v}, the Client."],
    "start_date": ["The contract starts on {v}.", "Start of services: {v}."],
    "term_months": ["The contract runs for a fixed term of {v} months.", "Term: {v} months from the start date."],
    "monthly_fee": ["The Client pays a monthly fee of {v} plus tax.", "Monthly service fee: {v} (before tax)."],
    "notice_period_days": ["Either party may terminate with a notice period of {v} days.", "Notice period: {v} days."],
    "company": ["Company: {v}.", "This annual statement is presented by {v}."],
    "fiscal_year": ["This statement covers fiscal year {v}.", "Fiscal year: {v}."],
    "revenue": ["Revenue for the fiscal year was {v}.", "Revenue: {v}."],
    "prior_year_revenue": ["Revenue in the prior year was {v}.", "Prior-year revenue: {v}."],
    "net_income": ["Net income for the fiscal year was {v}.", "Net income: {v}."],
    "total_assets": ["Total assets at year end amounted to {v}.", "Total assets: {v}."],
    "auditor": ["The statement was audited by {v}.", "Auditor: {v}."],
    "approval_date": ["The board approved this statement on {v}.", "Date of approval: {v}."],
    "purchase_order_number": ["Your purchase order: {v}.", "This invoice relates to purchase order {v}."],
    "discount": ["A discount of {v} has been deducted.", "Discount granted: {v}."],
    "late_fee": ["A late fee of {v} applies to overdue payments.", "Late fee per reminder: {v}."],
    "vat_id": ["VAT identification number: {v}.", "Our VAT ID is {v}."],
    "delivery_date": ["The goods were delivered on {v}.", "Delivery date: {v}."],
    "setup_fee": ["A one-off setup fee of {v} is charged with the first invoice.", "Setup fee: {v}."],
    "dividend_per_share": ["The board proposes a dividend per share of {v}.", "Dividend per share: {v}."],
    "employees": ["At year end the company had {v} employees.", "Number of employees at year end: {v}."],
    "research_expense": ["Research and development expenses were {v}.", "Research and development: {v}."],
}

DISTRACTOR_LINES: dict[str, list[str]] = {
    "ref_invoice": ["Ref: {v} (previous invoice, settled).", "This invoice follows our earlier invoice {v}."],
    "prior_total": ["For comparison, the total invoiced last year was {v}.", "Total invoiced in the previous year: {v}."],
    "credit_note": ["A credit note of {v} was issued for an unrelated order.", "Credit note for a cancelled order: {v}."],
    "reminder_date": ["A payment reminder would be sent on {v}.", "Reminder date if unpaid: {v}."],
    "old_iban": ["Our former account {v} is closed and must no longer be used."],
    "carrier": ["The goods were shipped by the carrier {v}.", "Transport was handled by {v}."],
    "address": ["Registered office: {v}."],
    "prev_contract": ["This contract replaces the earlier agreement {v}.", "Previous agreement: {v} (expired)."],
    "prev_fee": ["Under the earlier agreement the monthly fee was {v}.", "Previous monthly fee: {v}."],
    "prev_term": ["The earlier agreement had a term of {v} months."],
    "signing_date": ["This contract was signed on {v}.", "Date of signature: {v}."],
    "net_amount": ["Net amount for the first quarter: {v}.", "Services for the first quarter, net: {v}."],
    "tax_amount": ["VAT at {rate}: {v}.", "Tax on the first invoice: {v}."],
    "subcontractor": ["Support services are subcontracted to {v}.", "Subcontractor for hosting: {v}."],
    "prior_net_income": ["Net income in the prior year was {v}.", "Prior-year net income: {v}."],
    "prior_total_assets": ["Total assets at the end of the prior year were {v}.", "Prior-year total assets: {v}."],
    "q4_revenue": ["Revenue in the fourth quarter alone was {v}.", "Fourth-quarter revenue: {v}."],
    "revenue_target": ["For the coming year management targets revenue of {v}."],
    "prior_year": ["Comparative figures refer to fiscal year {v}."],
    "prior_approval": ["The statement for the previous year was approved on {v}."],
    "prior_auditor": ["Until the previous year the auditor was {v}."],
}

_NAME_HEADS = [
    "Nordwind", "Alder", "Bluehaven", "Kestrel", "Marlow", "Quillon", "Redfern", "Silverbirch", "Thornbury",
    "Vantage", "Willowmere", "Brightwater", "Copperfield", "Duskfield", "Eastgate", "Fernhill", "Granite Peak",
    "Harbourline", "Ironbridge", "Juniper", "Lakeshore", "Meridian", "Oakridge", "Pinecrest", "Stonebridge",
]
_NAME_CORES = [
    "Logistics", "Software", "Consulting", "Engineering", "Foods", "Medical Supplies", "Print Works", "Energy",
    "Textiles", "Analytics", "Facility Services", "Packaging", "Instruments", "Furniture", "Telecom",
]
_AUDIT_FIRMS = ["Becker & Lind Audit", "Harlow Partners", "Vermeer Assurance", "Castellan & Co", "Nordmark Revision",
                "Ashgrove Accountants", "Fairbanks Audit Group", "Lindqvist & Hale"]
# country -> (legal suffixes, street words, cities)
COUNTRIES: dict[str, tuple[list[str], list[str], list[str]]] = {
    "DE": (["GmbH", "AG", "KG"], ["Hafenstrasse", "Lindenweg", "Bahnhofstrasse"], ["Hamburg", "Munich", "Cologne"]),
    "NL": (["B.V.", "N.V."], ["Keizersgracht", "Stationsplein", "Havenweg"], ["Rotterdam", "Utrecht", "Eindhoven"]),
    "FR": (["SARL", "SAS"], ["Rue de la Gare", "Avenue Victor Hugo", "Quai des Docks"], ["Lyon", "Nantes", "Lille"]),
    "GB": (["Ltd", "PLC"], ["King Street", "Harbour Road", "Mill Lane"], ["Leeds", "Bristol", "Glasgow"]),
    "CH": (["AG", "SA", "GmbH"], ["Seestrasse", "Rue du Lac", "Bahnhofplatz"], ["Zurich", "Basel", "Lausanne"]),
    "IE": (["Ltd", "DAC"], ["Quay Street", "Main Street", "Dock Road"], ["Dublin", "Cork", "Galway"]),
}
COUNTRIES_BY_CURRENCY = {"EUR": ["DE", "NL", "FR"], "GBP": ["GB"], "CHF": ["CH"], "USD": ["IE", "NL"]}
# IBAN layout after the check digits: "n" digit, "a" capital letter
_IBAN_BBAN = {"DE": "n" * 18, "NL": "aaaa" + "n" * 10, "FR": "n" * 23, "GB": "aaaa" + "n" * 14, "CH": "n" * 17,
              "IE": "aaaa" + "n" * 14}
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def company(rng: random.Random, country: str, avoid: set[str]) -> str:
    """A plausible digit-free company name not in `avoid` (so names never collide)."""
    while True:
        name = f"{rng.choice(_NAME_HEADS)} {rng.choice(_NAME_CORES)} {rng.choice(COUNTRIES[country][0])}"
        if name not in avoid and name.split()[0] not in {a.split()[0] for a in avoid}:
            avoid.add(name)
            return name


def audit_firm(rng: random.Random, avoid: set[str]) -> str:
    name = rng.choice([f for f in _AUDIT_FIRMS if f not in avoid])
    avoid.add(name)
    return name


def address(rng: random.Random, country: str) -> str:
    _, streets, cities = COUNTRIES[country]
    return f"{rng.choice(streets)} {rng.randint(101, 299)}, {rng.randint(10000, 98999)} {rng.choice(cities)}"


def iban(rng: random.Random, country: str, bban: str | None = None) -> str:
    """A valid (mod-97) IBAN printed in groups of four, as banks print them."""
    if bban is None:
        bban = "".join(rng.choice(_UPPER) if c == "a" else str(rng.randint(0, 9)) for c in _IBAN_BBAN[country])
    digits = "".join(str(int(c, 36)) for c in bban + country + "00")
    raw = f"{country}{98 - int(digits) % 97:02d}{bban}"
    return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def vat_id(rng: random.Random, country: str) -> str:
    if country == "CH":
        n = f"{rng.randint(100, 999)}.{rng.randint(100, 999)}.{rng.randint(100, 999)}"
        return f"CHE-{n} MWST"
    if country == "NL":
        return f"NL{rng.randint(10**8, 10**9 - 1)}B01"
    return f"{country}{rng.randint(10**8, 10**9 - 1)}"


SYMBOLS = {"EUR": "€", "USD": "$", "GBP": "£"}
AMOUNT_STYLES = ["code", "symbol", "european"]
DATE_STYLES = ["dmy", "mdy", "iso"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]


def render_amount(value: Decimal, currency: str, style: str, cents: bool = True) -> str:
    """`EUR 14,851.20`, `€14,851.20` or `14.851,20 EUR` (CHF without a symbol: `CHF 14'851.20`)."""
    q = f"{value:,.2f}" if cents else f"{value:,.0f}"
    if style == "symbol":
        sym = SYMBOLS.get(currency)
        return f"{sym}{q}" if sym else f"{currency} {q.replace(',', chr(39))}"
    if style == "european":
        return q.replace(",", "_").replace(".", ",").replace("_", ".") + f" {currency}"
    return f"{currency} {q}"


def gold_amount(value: Decimal, currency: str, cents: bool = True) -> str:
    """The canonical gold: ISO code and a plain decimal."""
    return f"{currency} {value:.2f}" if cents else f"{currency} {value:.0f}"


def render_date(d: dt.date, style: str) -> str:
    if style == "dmy":
        return f"{d.day} {_MONTHS[d.month - 1]} {d.year}"
    return f"{_MONTHS[d.month - 1]} {d.day}, {d.year}" if style == "mdy" else d.isoformat()


def one_digit_off(rng: random.Random, v: Decimal) -> Decimal:
    """Same magnitude, one digit changed: the near miss a damaged cache produces."""
    digits = list(f"{v:.2f}".replace(".", ""))
    i = rng.randrange(1, len(digits))
    digits[i] = rng.choice([c for c in "0123456789" if c != digits[i]])
    return Decimal("".join(digits)) / 100


def money(rng: random.Random, lo: int, hi: int) -> Decimal:
    return Decimal(rng.randint(lo * 100, hi * 100)) / 100


TITLES = {"invoice": "INVOICE", "contract": "SERVICE CONTRACT", "financial_statement": "ANNUAL FINANCIAL STATEMENT"}
NOUNS = {"invoice": "invoice", "contract": "contract", "financial_statement": "financial statement"}



def question(doc_type: str, name: str) -> str:
    """Short and explicit, asked after the document, so small models can answer."""
    return (f"Question: What is the {FIELD_INFO[name][1]} in this {NOUNS[doc_type]}? Answer with the value only. "
            'If the document does not state it, answer "not found".')


def json_request(names: list[str]) -> str:
    keys = "\n".join(f'"{n}": {FIELD_INFO[n][2]}' for n in names)
    return ("Return one JSON object with exactly these keys (null when the document does not state a value; "
            f"dates as YYYY-MM-DD, amounts with their currency code):\n{keys}\nAnswer with the JSON object only.")
