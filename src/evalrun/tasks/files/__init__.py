"""The `files` pack: the user's own documents with a typed field schema and prompt templates. Private modules:
`_data`, `_schema`, `_plan`, `_templates`, `_fit`, `_gold`, `_build`; `_pack` is the SPEC."""

from evalrun.tasks.files._pack import NAME, SPEC, VERSION, FilesParams, build

__all__ = ["NAME", "SPEC", "VERSION", "FilesParams", "build"]
