"""Results teams already have, stored as evalrun runs: lm-eval sample logs and Inspect eval logs, each an
ordinary stored run, so `evalrun report`, the gate, replicates, the HTML and samples_df work on it unchanged.

    from evalrun.evals.imports import import_runs
    [base] = import_runs("lm-eval", ["out/fp32"], name="fp32")
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Literal, Sequence

from evalrun.evals.files import ConfigError
from evalrun.evals.imports._fields import FieldMap, load_field_map
from evalrun.evals.imports._inspect import read_inspect
from evalrun.evals.imports._lmeval import read_lmeval
from evalrun.evals.imports._run import Imported, StoredImport, store_imported

Format = Literal["lm-eval", "inspect"]
READERS = {"lm-eval": read_lmeval, "inspect": read_inspect}


def read_logs(fmt: Format, paths: list[str | Path], mapping: FieldMap | None = None) -> Imported:
    """One run from the logs at `paths` (ConfigError naming the file and line for anything unreadable)."""
    if fmt not in READERS:
        raise ConfigError(f"unknown log format {fmt!r}; known: {', '.join(READERS)}")
    return READERS[fmt]([Path(p) for p in paths], mapping)


def import_runs(fmt: Format, paths: Sequence[str | Path], name: str, out: str | Path = "runs",
                mapping: FieldMap | None = None, replicates: bool = False,
                log: Callable[[str], None] = print) -> list[StoredImport]:
    """Read and store the logs as one run named `name`; with `replicates`, each path is one run of the
    same configuration: the first the baseline, the others its replicates (`-r1`, `-r2`, ...)."""
    if not paths:
        raise ConfigError("give at least one log file or directory")
    groups = [[p] for p in paths] if replicates else [list(paths)]
    if replicates and len(groups) < 2:
        raise ConfigError("--replicates needs two or more logs (each one run of the same configuration)")
    return store_imported([read_logs(fmt, g, mapping) for g in groups], name, out, log)


__all__ = ["FieldMap", "Format", "Imported", "StoredImport", "import_runs", "load_field_map", "read_logs"]
