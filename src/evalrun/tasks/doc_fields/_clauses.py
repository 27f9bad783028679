"""Digit-free padding clauses composed from parts (one repeated sentence is trivially compressible by KV eviction)."""

from __future__ import annotations

import random
from typing import Callable

import evalrun.tasks.doc_fields._text as T

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
    """One digit-free sentence on `heading`; `said`: actions used in this section (not repeated while others remain)."""
    statement = doc_type == "financial_statement"
    subjects, actions, tails = (_STATEMENT if statement else _COMMERCIAL)[heading]
    opener = rng.choice(_STATEMENT_OPENERS if statement else _OPENERS)
    action = rng.choice([a for a in actions if a not in said] or actions)
    said.add(action)
    text = f"{rng.choice(subjects)} {action} {rng.choice(tails)}."
    if not statement:
        a, b = ROLES[doc_type]
        text = text.replace("{A}", a).replace("{B}", b)
    return f"{opener} {text}" if opener else text[0].upper() + text[1:]


def filler(rng: random.Random, doc_type: str, absent: list[str], budget: int,
           count: Callable[[str], int]) -> tuple[list[str], list[int], list[int], int]:
    """Clause sections worth at most `budget` tokens, counted one short unit at a time (never the whole text):
    (units, the unit where each section starts, the tokens before each start, the total)."""
    banned = [w for f in absent for w in T.DECOY_WORDS.get(f, ())]
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
