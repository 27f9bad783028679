"""How answers say a field has no value ("not stated", "There is no PO number."), on norm_text'd clauses."""

from __future__ import annotations

import re

from evalrun.values.currencies import ISO_CODES

_PART = (r"(?:found|named|stated|listed|specified|mentioned|given|provided|shown|present|available"
         r"|indicated|disclosed|identified|visible|legible|recorded|known|written|printed|displayed"
         r"|defined|quoted|referenced|extractable|determinable)")
_VERB = (r"(?:mention|state|say|list|specify|give|provide|show|indicate|name|disclose|reference"
         r"|identify|display|record|define|quote)(?:s|es)?")
_ADV = r"(?:(?:explicitly|clearly|directly|specifically|actually|anywhere|seem to|appear to) )*"
_NEG_AUX = r"(?:(?:does|do|did|can|could|will|would|is|are|was|were) not|doesnt|dont|didnt|cannot|cant|couldnt|wont|wouldnt)"
# denials whose object follows ("does not mention the carrier") or whose subject comes first ("the total is not stated")
_OBJECT_AFTER = re.compile(
    "|".join((
        rf"\b{_NEG_AUX} {_ADV}{_VERB}\b",
        rf"\b(?:{_NEG_AUX}|unable to|not able to|failed to|wasnt able to) {_ADV}(?:find|locate|identify|determine|see|extract|detect)\b",
        # an impossibility: "it is not possible to determine the delivery date", "impossible to tell the total"
        rf"\b(?:not possible|impossible|no way) to {_ADV}(?:find|locate|identify|determine|see|extract|detect|tell"
        r"|know|say|establish|ascertain)\b",
        r"\bthere (?:is|are|was|were|seems to be|appears to be) no\b|\bthere (?:isnt|arent|wasnt|werent)\b",
        rf"\bno (?:[a-z]+ ){{0,4}}(?:is |are |was |were |has been |have been |could be |can be )?{_PART}\b",
        r"\bno (?:mention|indication|reference|record|information|data|details?)\b",
    ))
)
_SUBJECT_BEFORE = re.compile(
    rf"\bnot (?:be |been |being )?{_ADV}{_PART}\b|\bnone (?:is |are |was |were )?{_PART}\b"
    r"|\b(?:cannot|cant|can not|could not|couldnt) be (?:determined|established|ascertained|told|identified|found)\b"
    r"|\bnot (?:in|on|within|from) (?:the|this) (?:document|text|file|invoice|contract|source|context)\b"
)
_HINT = re.compile(r"[Nn][Oo]|[Nn][’'][Tt]|[Uu]nable|[Ii]mpossible|[Ff]ailed|[Nn]icht|[Kk]ein|[Nn]on|[Pp]as\b|[Aa]ucun|[Nn]ão|[Nn]iet"
                   r"|[Ss]in\b|[Ss]enza|[Ii]ntrouvable|[Uu]nbekannt|[Dd]esconocid|記載|不明|なし|ありません|見つかりません|未|没有|無")
# other languages' "not stated" on norm_text'd clauses ("nest pas indiqué"), each read as the English one,
# so what it is about is judged the same way
_FOREIGN = re.compile("|".join((
    # German: nicht angegeben / genannt / aufgeführt / vorhanden / gefunden / enthalten / ersichtlich; keine Angabe
    r"\bnicht (?:(?:explizit|ausdrücklich|eindeutig) )?(?:angegeben|genannt|aufgeführt|vorhanden|gefunden|enthalten"
    r"|ersichtlich|erwähnt|angeführt|ausgewiesen|verfügbar|bekannt)\b|\bkeine (?:angabe|angaben)\b|\bunbekannt\b",
    # French: non indiqué / précisé / mentionné / spécifié / renseigné / communiqué; (n'est) pas indiqué; introuvable
    r"\b(?:non|pas) (?:indiqu|précis|mentionn|spécifi|renseign|communiqu|fourni|trouv|disponible|mentionn)\w*"
    r"|\bintrouvable\b|\baucune? (?:\w+ ){0,3}(?:nest|n est) (?:indiqu|précis|mentionn|spécifi)\w*",
    # Spanish / Portuguese / Italian: no se indica / especifica / menciona; no consta; no indicado; não informado
    r"\bno se (?:indica|especifica|menciona|encuentra|proporciona|detalla|informa)\b|\bno consta\b"
    r"|\bno (?:indicad|especificad|mencionad|encontrad|disponible|informad|proporcionad)\w*"
    r"|\bnão (?:(?:é|foi) )?(?:informad|indicad|especificad|mencionad|encontrad|consta|disponível)\w*"
    r"|\bnon (?:è )?(?:indicat|specificat|presente|riportat|menzionat|disponibile|trovat)\w*|\bdesconocid[oa]\b",
    # Dutch
    r"\bniet (?:vermeld|opgegeven|gevonden|aangegeven|beschikbaar|bekend)\b",
    # Japanese / Chinese
    r"記載(?:なし|無し|がありません|されていません|されておりません|はありません)|不明|見つかりません|未記載|該当なし"
    r"|未(?:提及|注明|说明|列明|找到|提供)|没有(?:提及|注明|说明|找到|提供)|無記載",
)))

# words that give a denial no subject of its own: "I could not find it in the text." is about the field asked
BARE_WORDS = frozenset("""
the a an this that these those it its any such there here i we me my our you is are was were be been being
am do does did doesnt dont didnt not no none nothing can could cannot cant couldnt will would wont wouldnt
unable able failed to in on of from for within at by about with as so also anywhere explicitly clearly
directly specifically actually seem seems appear appears unfortunately sorry however therefore answer
document documents text file source context passage page provided given information data detail details
value values field mention mentioned mentions state stated states say says said list listed lists specify
specified specifies give gives show shown shows indicate indicated indicates name named names disclose
disclosed reference referenced identify identified display displayed record recorded define defined quote
quoted find found locate located determine see extract detect present available visible legible known
written printed extractable determinable indication possible impossible way tell know establish ascertain
der die das ist sind im in dem den dokument angabe le la les est sont dans du de des document el los las es son
en se il lo è no não o os um uma
""".split())
# Words that leave a value clause about the field asked for: "The amount is EUR 5".
VALUE_WORDS = frozenset("""
the a an this that it its is are was were be of for in on at to by as so here answer value amount figure
number sum result approximately about around roughly exactly only just date
""".split()) | frozenset(c.lower() for c in ISO_CODES) | frozenset(
    "euro euros dollar dollars pound pounds yen krona krone kronor kroner rand".split())
_REFERENCE = re.compile(
    r"(?i)\b(?:section|sec|page|pg|line|clause|paragraph|para|article|art|table|figure|fig|appendix|schedule"
    r"|annex|chapter|row|column|col|step|note|item|part|point|question|exhibit|box)\.?\s*(?:no\.?\s*|nr\.?\s*|#\s*)?"
    r"[0-9]+(?:\.[0-9]+)*[a-z]?\b|§+\s*[0-9]+(?:\.[0-9]+)*"
)


def may_deny(text: str) -> bool:
    """A cheap first look: could `text` hold a denial at all?"""
    return bool(_HINT.search(text))


# "The document is not found.": about the document, no denial of the field (a value beside it stands)
_DOCUMENT_DENIAL = re.compile(
    r"\b(?:the |this |that |your |a )?(?:document|file|text|source|attachment|context|passage|pdf)s? "
    r"(?:is |was |are |were |has |could |can )?(?:been )?(?:not|cannot|couldnt|cant) (?:be )?"
    r"(?:found|available|provided|present|attached|accessible|readable|legible|loaded|opened|included|complete)\b"
)


def drop_document_denials(norm_clause: str) -> str:
    """The clause without denials of the document itself ("the document is not found")."""
    return _DOCUMENT_DENIAL.sub(" ", norm_clause) if "not" in norm_clause or "nt" in norm_clause else norm_clause


def may_deny_foreign(norm_clause: str) -> bool:
    return _FOREIGN.search(norm_clause) is not None


def denial_targets(norm_clause: str) -> list[str]:
    """What each denial in a normalised clause is about: the words after it ("does not mention the carrier"), or
    the few before it ("the total is not stated"; "total eur 500 with vat not shown" is about VAT)."""
    if may_deny_foreign(norm_clause):
        norm_clause = _FOREIGN.sub(" not stated ", norm_clause)
    out = [norm_clause[m.start():] for m in _OBJECT_AFTER.finditer(norm_clause)]
    for m in _SUBJECT_BEFORE.finditer(norm_clause):
        out.append(" ".join(norm_clause[:m.start()].split()[-3:] + [m[0]]))
    return out


def mask_references(text: str) -> str:
    """Blank numbers pointing into the document ("Section 4", "§ 3"): where the model looked, not a value."""
    return _REFERENCE.sub(lambda m: " " * len(m[0]), text)
