"""The `files` pack: the user's own documents (JSONL, CSV, Parquet, a `datasets` dataset)
with a typed field schema and prompt templates.

One pack, several concerns, each a private module: reading rows (`_data`), the field
schema (`_schema`), planning the asks (`_plan`), templates (`_templates`), fitting a
document to the context (`_fit`), checking golds (`_gold`) and building prompts (`_build`);
`_pack` puts them together as the pack's SPEC.
"""

from evalrun.tasks.files._pack import NAME, SPEC, VERSION, FilesParams, build

__all__ = ["NAME", "SPEC", "VERSION", "FilesParams", "build"]
