"""Laying a doc_fields document out at a target length in the model's tokens."""

from __future__ import annotations

import random

import evalrun.tasks.doc_fields._clauses as C
import evalrun.tasks.doc_fields._text as T
from evalrun.tasks.base import TokenCounter
from evalrun.tasks.doc_fields._facts import Doc

def layout(d: Doc, length: int, seed: int, budget: int, count: TokenCounter,
           stream: str) -> tuple[str, dict[str, tuple[float, str]]]:
    """The document text and, for every placed fact or distractor key, its (relative depth, sentence). Field
    groups take shuffled, evenly spaced slots so facts sit at the start, the middle and the end."""
    # a fact in the document has its sentence (only an absent field's Fact has none)
    text = {**d.distractors, **{n: f.line for n, f in d.facts.items() if f.line is not None}}

    def render(group: tuple[str | None, list[str]]) -> str:
        head, keys = group
        return "\n\n" + (f"{head}\n" if head else "") + "\n".join(text[k] for k in keys)

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
        raise ValueError(f"{stream.split(':')[0]}: a length of {length} tokens is too short for document {d.doc_id} "
                         f"(its facts alone need about {length - budget + fixed} tokens)")
    rng = random.Random(f"{stream}:{seed}:{d.doc_id}:{length}")
    rng.shuffle(fields)
    groups = [((k + rng.uniform(0.2, 0.8)) / len(fields), g) for k, g in enumerate(fields)]
    groups += [(rng.random(), g) for g in loose]
    units, starts, before, filled = C.filler(rng, d.doc_type, sorted(d.absent), budget - fixed, count)
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
        for _, group in sorted(slots.get(b, []), key=lambda x: x[0]):
            piece = render(group)
            for k in group[1]:
                where[k] = (size + piece.index(text[k]), text[k])
            out.append(piece)
            size += len(piece)
        section = "".join(units[cut[b] : cut[b + 1]]) if b + 1 < len(cut) else ""
        out.append(section)
        size += len(section)
    doc = "".join(out)
    return doc, {k: (round(pos / len(doc), 3), s) for k, (pos, s) in where.items()}
