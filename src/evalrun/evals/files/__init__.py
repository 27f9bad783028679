"""Files a run or a config is read from or written to, and ConfigError (contract/errors.py), the one error every
configuration problem ends in."""

from __future__ import annotations

from evalrun.evals.files._atomic import write_atomic
from evalrun.evals.files.store_files import StoreLink, StoreWriteFailed
from evalrun.evals.files._yaml import (
    MAX_EXTENDS_DEPTH, YamlProblem, check_finite, load_strict, merge, merge_origins, origin_file, origins_of,
)
from evalrun.evals.files._errors import ConfigError, read_yaml, validation_error

__all__ = [
    "ConfigError", "MAX_EXTENDS_DEPTH", "StoreLink", "StoreWriteFailed", "YamlProblem", "check_finite",
    "load_strict", "merge", "merge_origins", "origin_file", "origins_of", "read_yaml", "validation_error",
    "write_atomic",
]
