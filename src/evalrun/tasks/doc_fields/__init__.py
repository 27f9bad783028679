"""The `doc_fields` pack: long generated business documents with typed fields, distractors and decoys."""

from evalrun.tasks.doc_fields._facts import CORE, OPTIONAL
from evalrun.tasks.doc_fields._pack import NAME, SPEC, VERSION, DocFieldsParams, build

__all__ = ["CORE", "NAME", "OPTIONAL", "SPEC", "VERSION", "DocFieldsParams", "build"]
