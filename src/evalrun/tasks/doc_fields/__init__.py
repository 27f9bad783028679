"""The `doc_fields` pack: long generated business documents with typed fields, distractors and decoys, padded
to lengths in the model's tokens (`_facts`, `_text`, `_clauses`, `_layout`; `_pack` builds the items)."""

from evalrun.tasks.doc_fields._facts import CORE, OPTIONAL
from evalrun.tasks.doc_fields._pack import NAME, SPEC, VERSION, DocFieldsParams, build

__all__ = ["CORE", "NAME", "OPTIONAL", "SPEC", "VERSION", "DocFieldsParams", "build"]
