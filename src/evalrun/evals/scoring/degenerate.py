"""Degenerate answers (docs/gate.md, 'Collapse canary'): an engine that breaks often answers "????////", nothing,
a loop, the document itself, a refusal or another script, and raises nothing. Each answer gets one class or None,
and a Tally of a candidate's and the baseline's answers on the same items decides `collapse`."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from evalrun.contract.types import Item
from evalrun.evals.stats import FlipTest
from evalrun.values.denials import denial_targets, drop_document_denials, may_deny
from evalrun.values.loops import loop_spans
from evalrun.values.text import mostly_copied, norm_text

HARD = ("empty", "repeat", "echo")  # no sane model gives these where it answered before: no noise allowance
SOFT = ("loop", "refusal", "script")  # a sane model has some: decided against the baseline's own rate
HARD_K = 3  # this many hard-degenerate answers where the baseline answered fail the candidate
CONSTANT = "one same answer to items whose baseline answers all differ"
SOFT_LIMIT = 2  # a soft class fails only from 3 answers, and only beyond the baseline's rate (Fisher)
_SORRY = re.compile(r"(?i)\b(?:i'?m sorry|i apologi[sz]e|i (?:cannot|can ?not|can'?t|am unable|'m unable) "
                    r"(?:help|assist|answer|provide|comply)|as an ai\b)")
_DIGIT = re.compile(r"\d")


def _script(text: str) -> Counter[str]:
    """Letters by writing script ("LATIN", "CYRILLIC", "CJK" for Han and kana)."""
    names = (unicodedata.name(ch, "?").split(" ")[0] for ch in text if ch.isalpha())
    return Counter("CJK" if n in ("HIRAGANA", "KATAKANA") else n for n in names)


def _refuses(text: str) -> bool:
    """No value at all, and a refusal ("I'm sorry, I can't help") or a denial ("The total is not stated")."""
    if _DIGIT.search(text):
        return False
    return bool(_SORRY.search(text)) or (may_deny(text) and bool(denial_targets(drop_document_denials(norm_text(text)))))


def _stated(answer: str | None) -> str:
    """What an answer states, for `constant`: its first line where that line holds a value ("The answer is: 1."
    before a varying explanation), else the whole answer (a bare lead-in such as "Here is the answer:" is no value)."""
    text = (answer or "").strip()
    first = text.split("\n", 1)[0]
    return norm_text(first if _DIGIT.search(first) else text)


def degenerate(answer: str | None, item: Item, baseline: str | None = None) -> str | None:
    """The answer's degenerate class, or None. `baseline` (its answer to the same item) makes a refusal or
    another script count only where the baseline answered in its own; without it, refusals count as they are."""
    text = (answer or "").strip()
    if not text:
        return "empty"
    bare = "".join(text.split())
    tokens = text.split()
    if (len(bare) >= 3 and not any(ch.isalnum() for ch in bare)) or (len(tokens) >= 4 and len(set(tokens)) == 1) \
            or (len(bare) >= 6 and len(set(bare)) == 1 and not bare.isdigit()):
        return "repeat"  # "????////", "!!!!!!", "the the the the", "aaaaaa"
    if any(src and mostly_copied(text, src, share=0.8, min_words=20, n=16) for src in (item.context, item.question)):
        return "echo"  # 80% of it runs of 16 words of the document or question: longer than a quoted answer sentence
    if len({i for start, end, _ in loop_spans(text) for i in range(start, end)}) * 2 >= len(text):
        return "loop"  # loops cover half of it
    base = (baseline or "").strip()
    if _refuses(text) and not (baseline is not None and _refuses(base)):
        return "refusal"
    own, theirs = _script(text), _script(base)
    if baseline is not None and sum(own.values()) >= 3 and sum(theirs.values()) >= 3:
        main = theirs.most_common(1)[0][0]
        if own[main] * 2 < sum(own.values()):
            return "script"
    return None


@dataclass
class Tally:
    """A candidate's degenerate answers and the baseline's on the same items: what `collapse` decides on."""

    seen: int = 0
    cand: Counter[str] = field(default_factory=Counter)
    base: Counter[str] = field(default_factory=Counter)
    hard: int = 0  # hard-degenerate candidate answers where the baseline's answer was none
    examples: list[str] = field(default_factory=list)
    # `constant`, on items where neither answer is classed: candidate's answer -> baseline's -> example
    same: dict[str, dict[str, str]] = field(default_factory=dict)
    const: tuple[int, str] = (0, "")  # the count and the candidate's answer it is of

    def add(self, item: Item, base: str | None, cand: str | None) -> None:
        """One paired answer (neither a generation error); an item asking no field (speed only) is no answer."""
        if not item.fields:
            return
        b, c = degenerate(base, item), degenerate(cand, item, base or "")
        self.seen += 1
        self.base.update([b] if b else [])
        self.cand.update([c] if c else [])
        if not (b or c):  # `constant`: the most items given one same answer whose baseline answers differ from
            # each other and from it (identical answers never count; the count only grows, as the hard one)
            nb, nc = _stated(base), _stated(cand)
            (group := self.same.setdefault(nc, {})).setdefault(nb, f"{item.id}: {(cand or '')[:24]!r}")
            self.const = max(self.const, (len(group.keys() - {nc}), nc))
            if self.const[0] > 1:  # one item is no constant answer
                self.cand["constant"] = self.const[0]
        if c and b is None:
            self.hard += c in HARD
            if len(self.examples) < 3:
                self.examples.append(f"{item.id}: {(cand or '')[:24]!r}")

    def decide(self, confidence: float) -> tuple[bool, int, int, str]:
        """(collapsed, measured, threshold, why): hard answers against HARD_K, else the first soft class
        whose count the one-sided Fisher test finds above the baseline's on these items."""
        hard = "empty/repeat/echo answers where the baseline answered"
        if self.hard >= HARD_K:
            return True, self.hard, HARD_K - 1, hard
        if self.const[0] >= HARD_K:
            return True, self.const[0], HARD_K - 1, CONSTANT
        for c in SOFT:
            test = FlipTest(SOFT_LIMIT, 1.0 - confidence, self.base[c], self.seen)
            if test.fails(self.cand[c], self.seen):
                return True, self.cand[c], (test.critical(self.seen) or 1) - 1, \
                    f"{c} answers above the baseline's rate (p = {test.p_value(self.cand[c], self.seen):.3g})"
        return False, self.hard, HARD_K - 1, hard

    def detail(self, why: str) -> str:
        counts = ", ".join(f"{c} {n}" for c, n in sorted(self.cand.items())) or "none"
        base = ", ".join(f"{c} {n}" for c, n in sorted(self.base.items())) or "none"
        ex = [e for nb, e in self.same.get(self.const[1], {}).items() if nb != self.const[1]][:3] \
            if why == CONSTANT else self.examples
        shown = f"; e.g. {'; '.join(ex)}" if ex else ""
        return f"{why}; degenerate answers of {self.seen}: candidate {counts}, baseline {base}{shown}"


__all__ = ["HARD", "HARD_K", "SOFT", "Tally", "degenerate"]
