"""The `files` pack: the user's own documents with a typed field schema and prompt templates (`_pack`: SPEC)."""

from evalrun.tasks.files._pack import NAME, SPEC, VERSION, FilesParams, build

__all__ = ["NAME", "SPEC", "VERSION", "FilesParams", "build"]
