"""Vocabulary and rendering for the doc_fields pack: names, clauses, field lines.

Kept apart from the pack logic so that the words can grow without the layout
code growing with them. Clauses are composed from parts (a single repeated
sentence is trivially compressible by KV eviction) and contain no digits, so
the only numbers in a document are the ones the pack placed on purpose.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Callable

# ----------------------------------------------------------------- field vocabulary

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

# Words that would give an absent (decoy) field away; no sentence with them is
# allowed in a document where that field is a decoy.
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

# ----------------------------------------------------------------- names

_NAME_HEADS = [
    "Nordwind", "Alder", "Bluehaven", "Kestrel", "Marlow", "Quillon", "Redfern", "Silverbirch", "Thornbury",
    "Vantage", "Willowmere", "Brightwater", "Copperfield", "Duskfield", "Eastgate", "Fernhill", "Granite Peak",
    "Harbourline", "Ironbridge", "Juniper", "Lakeshore", "Meridian", "Oakridge", "Pinecrest", "Stonebridge",
]
_NAME_CORES = [
    "Logistics", "Software", "Consulting", "Engineering", "Foods", "Medical Supplies", "Print Works", "Energy",
    "Textiles", "Analytics", "Facility Services", "Packaging", "Instruments", "Furniture", "Telecom",
]
_AUDIT_FIRMS = [
    "Becker & Lind Audit", "Harlow Partners", "Vermeer Assurance", "Castellan & Co", "Nordmark Revision",
    "Ashgrove Accountants", "Fairbanks Audit Group", "Lindqvist & Hale",
]
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


# ----------------------------------------------------------------- values as printed

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
    if style == "mdy":
        return f"{_MONTHS[d.month - 1]} {d.day}, {d.year}"
    return d.isoformat()


def one_digit_off(rng: random.Random, v: Decimal) -> Decimal:
    """Same magnitude, one digit changed: the near miss a damaged cache produces."""
    digits = list(f"{v:.2f}".replace(".", ""))
    i = rng.randrange(1, len(digits))
    digits[i] = rng.choice([c for c in "0123456789" if c != digits[i]])
    return Decimal("".join(digits)) / 100


def money(rng: random.Random, lo: int, hi: int) -> Decimal:
    return Decimal(rng.randint(lo * 100, hi * 100)) / 100


# ----------------------------------------------------------------- clauses

TITLES = {"invoice": "INVOICE", "contract": "SERVICE CONTRACT", "financial_statement": "ANNUAL FINANCIAL STATEMENT"}
NOUNS = {"invoice": "invoice", "contract": "contract", "financial_statement": "financial statement"}
# the two parties as the clauses name them (never the company names: those are placed facts)
ROLES = {"invoice": ("the Supplier", "the Customer"), "contract": ("the Provider", "the Client")}

# heading -> (subjects, actions, tails); {A} and {B} are the two parties
_COMMERCIAL: dict[str, tuple[list[str], list[str], list[str]]] = {
    "Payment terms": (
        ["{B}", "each party", "the accounts team of {B}", "{A}"],
        ["shall settle every invoice by bank transfer", "must quote the reference shown on the invoice",
         "shall bear its own bank charges", "may raise questions about an invoice in writing",
         "shall not withhold payment for minor defects", "will receive a statement of open items on request"],
        ["unless agreed otherwise in writing", "within the period stated in this document", "without any deduction",
         "once the service has been accepted", "in line with the agreed schedule"]),
    "Confidentiality": (
        ["each party", "{A}", "{B}", "the receiving party"],
        ["shall keep all business information strictly confidential", "must not disclose these terms to third parties",
         "shall use confidential information only for the agreed purpose",
         "shall return or destroy confidential material on request",
         "must protect shared documents with reasonable care"],
        ["during and after the term of the relationship", "except where the law requires disclosure",
         "unless the other party consents in writing", "for as long as the information remains confidential"]),
    "Liability": (
        ["each party", "{A}", "{B}"],
        ["shall be liable only for damage caused intentionally or by gross negligence",
         "shall not be liable for indirect or consequential losses",
         "must notify the other party of any claim without undue delay",
         "shall take reasonable steps to limit any loss", "remains responsible for the acts of its subcontractors"],
        ["to the extent permitted by law", "as set out in this document", "subject to the limits agreed above",
         "in every case of ordinary negligence", "regardless of the legal basis of the claim"]),
    "Delivery": (
        ["{A}", "the carrier", "the warehouse team of {A}"],
        ["shall deliver the goods to the address named by {B}", "must pack all items securely for transport",
         "shall inform {B} promptly of any expected delay", "will provide a delivery note with each shipment",
         "shall bear the risk until the goods are handed over"],
        ["at its own expense", "during normal business hours", "unless {B} requests otherwise",
         "in accordance with the agreed incoterms", "with the care of a prudent merchant"]),
    "Governing law": (
        ["this document", "any dispute arising from this document", "the relationship between the parties"],
        ["shall be governed by the laws of the country where {A} has its registered office",
         "shall first be discussed between senior managers of both parties",
         "shall be referred to the competent courts at the seat of {A}",
         "is subject to mandatory consumer protection rules where they apply"],
        ["without regard to conflict of law rules", "before any formal proceedings begin", "in good faith",
         "as far as the law allows"]),
    "Data protection": (
        ["each party", "{A}", "{B}"],
        ["shall process personal data only in accordance with applicable data protection law",
         "must implement appropriate technical and organisational measures",
         "shall inform the other party without delay of any data breach",
         "will delete personal data once it is no longer needed",
         "shall not transfer personal data outside the agreed region without consent"],
        ["at all times", "as required by the applicable regulations", "for the duration of the services",
         "and shall document these steps", "unless a statutory retention duty applies"]),
    "Force majeure": (
        ["each party", "the affected party", "{A}"],
        ["shall not be held responsible for delays caused by events beyond reasonable control",
         "must inform the other party promptly when such an event occurs",
         "shall resume performance as soon as the event has ended",
         "may suspend its obligations for the duration of the event"],
        ["such as floods, fires, strikes or pandemics", "provided it acted with due care",
         "and shall keep the other party informed", "without any claim for damages"]),
    "Termination": (
        ["either party", "{B}", "{A}"],
        ["may terminate the relationship for good cause", "shall give written notice of termination",
         "must settle all outstanding invoices upon termination", "shall return any equipment provided for the services",
         "will hand over all documents belonging to the other party"],
        ["in accordance with the notice period agreed", "without undue delay", "at the end of a calendar month",
         "after a reasonable cure period", "as described in this document"]),
    "Warranties": (
        ["{A}", "the project team of {A}", "the responsible project lead"],
        ["shall perform the services with professional care and skill",
         "warrants that the goods are free from material defects",
         "shall remedy any defect reported in good time", "will replace faulty parts free of charge",
         "shall comply with all applicable product standards"],
        ["for the statutory warranty period", "after receiving a written defect notice", "at its own discretion",
         "unless the defect was caused by improper use"]),
    "Notices": (
        ["all notices", "any change of address", "formal communication between the parties"],
        ["must be made in writing", "shall be sent to the addresses stated in this document",
         "is deemed received on the next business day", "may also be sent by electronic mail"],
        ["unless a different form is required by law", "with a copy to the legal department",
         "and shall be confirmed on request", "to be valid"]),
    "Assignment and subcontracting": (
        ["each party", "{A}", "{B}"],
        ["may assign its rights only with prior written consent", "may engage qualified subcontractors",
         "shall remain fully responsible for any subcontracted work",
         "must ensure that subcontractors keep information confidential"],
        ["except within its own group of companies", "after informing the other party", "on the same terms as this document",
         "provided quality is not affected"]),
    "Intellectual property": (
        ["{A}", "each party", "the owner of the materials"],
        ["retains all rights in its pre-existing materials", "grants a licence to use the deliverables for internal purposes",
         "shall not remove any copyright notices", "must not reverse engineer any software provided"],
        ["for the duration of the relationship", "unless agreed otherwise in writing", "within the scope of this document",
         "to the extent necessary for the services"]),
    "Insurance": (
        ["{A}", "each party", "{B}"],
        ["shall maintain adequate liability insurance", "must provide proof of insurance on request",
         "shall inform the other party of any material change in cover"],
        ["with a reputable insurer", "throughout the term of the relationship", "at its own cost"]),
}

_STATEMENT: dict[str, tuple[list[str], list[str], list[str]]] = {
    "Accounting policies": (
        ["the Company", "the Group", "management"],
        ["prepares its accounts on a going concern basis", "recognises revenue when control of the goods passes to the buyer",
         "measures inventories at the lower of cost and net realisable value", "applies the same policies as in the prior year",
         "reviews the useful lives of its assets regularly"],
        ["in line with the applicable accounting standards", "unless stated otherwise in these notes",
         "consistently across all segments", "as described in the notes below"]),
    "Risk management": (
        ["the board of directors", "the risk committee", "management", "the Group"],
        ["monitors currency and interest rate risks closely", "reviews the main operational risks",
         "maintains a diversified customer base", "assesses the credit quality of major customers",
         "limits exposure to single suppliers"],
        ["on a regular basis", "throughout the year", "with the support of external advisers",
         "as part of its annual planning", "and reports to the board"]),
    "Outlook": (
        ["management", "the board", "the Group"],
        ["expects stable demand in its core markets", "plans further investment in digital services",
         "remains cautious about energy prices", "sees opportunities in new regional markets",
         "intends to strengthen its balance sheet"],
        ["for the coming year", "despite an uncertain economic environment", "subject to market conditions",
         "while keeping costs under control"]),
    "Corporate governance": (
        ["the board of directors", "the audit committee", "the supervisory board"],
        ["met regularly during the year", "reviewed the internal control system", "approved the annual budget",
         "discussed the strategy with management", "evaluated its own effectiveness"],
        ["in accordance with the governance code", "with all members present", "and recorded its decisions",
         "as required by the articles of association"]),
    "Sustainability": (
        ["the Group", "the Company", "management"],
        ["reduced energy consumption at its main sites", "published a report on environmental targets",
         "introduced new standards for responsible sourcing", "expanded recycling across its facilities"],
        ["during the year under review", "in cooperation with its suppliers", "as part of its long term plan",
         "and will report on progress"]),
    "Liquidity and financing": (
        ["the Group", "the Company", "the treasury team"],
        ["maintained sufficient liquidity at all times", "renewed its committed credit facilities",
         "complied with all loan covenants", "reduced its reliance on short term borrowing"],
        ["during the reporting period", "on unchanged terms", "with its relationship banks", "as planned"]),
    "Related parties": (
        ["transactions with related parties", "services between group companies", "balances with related parties"],
        ["were conducted on normal market terms", "are disclosed in the notes", "were reviewed by the audit committee"],
        ["throughout the year", "in line with group policy", "without exception"]),
    "Critical estimates": (
        ["management", "the Company", "the finance team"],
        ["makes judgements about the recoverability of receivables", "estimates provisions for warranties and claims",
         "assesses goodwill for impairment", "reviews deferred tax assets"],
        ["at each reporting date", "based on the best information available", "using reasonable assumptions",
         "and revises them when circumstances change"]),
}
_OPENERS = ["", "", "", "In particular,", "Furthermore,", "For the avoidance of doubt,", "In addition,", "Where appropriate,"]
_STATEMENT_OPENERS = ["", "", "", "In addition,", "As in previous years,", "During the year,", "Furthermore,"]


def topics(doc_type: str) -> list[str]:
    return sorted(_STATEMENT if doc_type == "financial_statement" else _COMMERCIAL)


def clause(rng: random.Random, doc_type: str, heading: str, said: set[str]) -> str:
    """One digit-free sentence on `heading`, composed from parts so the text varies;
    `said` holds the actions already used in this section (not repeated while others remain)."""
    statement = doc_type == "financial_statement"
    subjects, actions, tails = (_STATEMENT if statement else _COMMERCIAL)[heading]
    opener = rng.choice(_STATEMENT_OPENERS if statement else _OPENERS)
    action = rng.choice([a for a in actions if a not in said] or actions)
    said.add(action)
    text = f"{rng.choice(subjects)} {action} {rng.choice(tails)}."
    if not statement:
        a, b = ROLES[doc_type]
        text = text.replace("{A}", a).replace("{B}", b)
    if opener:
        return f"{opener} {text}"
    return text[0].upper() + text[1:]


def filler(rng: random.Random, doc_type: str, absent: list[str], budget: int,
           count: Callable[[str], int]) -> tuple[list[str], list[int], list[int], int]:
    """Clause sections worth at most `budget` tokens, counted one short unit at a
    time (O(n) counts, never the whole text). No sentence names an absent field.
    Returns the units, the unit index where each section starts, the token count
    before each section start, and the total."""
    banned = [w for f in absent for w in DECOY_WORDS.get(f, ())]
    units: list[str] = []
    starts: list[int] = []
    before: list[int] = []
    total = 0
    order: list[str] = []
    while True:
        if not order:
            order = topics(doc_type)
            rng.shuffle(order)
        heading = order.pop()
        said: set[str] = set()
        for j in range(rng.randint(2, 5)):
            s = clause(rng, doc_type, heading, said)
            for _ in range(50):  # a clause naming an absent field would give the decoy away
                if not any(w in s.lower() for w in banned):
                    break
                s = clause(rng, doc_type, heading, said)
            else:
                break
            unit = f"\n\n{heading}\n{s}" if j == 0 else f" {s}"
            n = count(unit)
            if total + n > budget:
                return units, starts, before, total
            if j == 0:
                starts.append(len(units))
                before.append(total)
            units.append(unit)
            total += n


# ----------------------------------------------------------------- prompts


def question(doc_type: str, name: str) -> str:
    """Short and explicit, asked after the document, so small models can answer."""
    return (f"Question: What is the {FIELD_INFO[name][1]} in this {NOUNS[doc_type]}? Answer with the value only. "
            'If the document does not state it, answer "not found".')


def json_request(names: list[str]) -> str:
    keys = "\n".join(f'"{n}": {FIELD_INFO[n][2]}' for n in names)
    return ("Return one JSON object with exactly these keys (null when the document does not state a value; "
            f"dates as YYYY-MM-DD, amounts with their currency code):\n{keys}\nAnswer with the JSON object only.")
