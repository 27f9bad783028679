"""`evalrun export`: stored runs as one Parquet or CSV table, those of `evalrun.samples_df` / `fields_df`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.markup import escape

from evalrun.cli_app import _guard, _log, console, err_console, trust_option
from evalrun.cli_outputs import check_outputs
from evalrun.contract.errors import EXIT_RUNTIME
from evalrun.evals.files import ConfigError, write_atomic

if TYPE_CHECKING:
    from evalrun.evals.frames import Format

TABLES = ("fields", "samples")


def export(
    run_dirs: list[Path] = typer.Argument(..., help="Stored run directories (runs/<name>-<key12>/)."),
    parquet: Optional[Path] = typer.Option(None, "--parquet", help="Write the table as Parquet (pyarrow; keeps "
                                           "every column's dtype and tells a missing value from an empty string)."),
    csv: Optional[Path] = typer.Option(None, "--csv", help="Write the table as CSV (UTF-8, text quoted, cells as "
                                       "stored: nothing prefixed to a leading =, +, - or @)."),
    table: str = typer.Option("fields", "--table", help="fields: one row per item and field (outcome, sub-code, "
                              "flip); samples: one row per stored generation (output, tokens, timings)."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="A run directory to pair every run with "
                                            "(fields table): fills `flip` with harmful / helpful / empty."),
    trust_edited_items: bool = trust_option,
) -> None:
    """Write stored runs as one table, for pandas, DuckDB or a spreadsheet; no model is loaded.

    The columns and their dtypes are those of `evalrun.fields_df` / `evalrun.samples_df`
    (docs/dataframes.md). The run directories are only read. Exit 2 for a
    directory that is not a readable run, a bad option or an output path that cannot be
    written; 3 when writing fails.
    """
    from evalrun.evals import frames

    def go() -> int:
        if table not in TABLES:
            raise ConfigError(f"invalid value {table!r}; allowed: {', '.join(TABLES)}", path="--table")
        if baseline is not None and table != "fields":
            raise ConfigError("--baseline pairs fields: it needs --table fields", path="--baseline")
        # the files to write, checked before any run is read: at least one, none inside a run directory
        given: tuple[tuple[Format, Path | None], ...] = (("parquet", parquet), ("csv", csv))
        targets: dict[Format, Path] = {fmt: path for fmt, path in given if path is not None}
        if not targets:
            raise ConfigError("give --parquet PATH or --csv PATH (or both): where the table goes")
        named = {f"--{fmt}": path for fmt, path in targets.items()}
        check_outputs(named, [*run_dirs, *([baseline] if baseline else [])])
        if table == "samples":
            df = frames.samples_df(run_dirs, trust_edited_items, log=_log)
        else:
            df = frames.fields_df(run_dirs, baseline, trust_edited_items, log=_log)
        code = 0
        for fmt, path in targets.items():
            try:
                write_atomic(path, frames.frame_bytes(df, fmt))
            except Exception as exc:  # one format failing must not cost the other
                err_console.print(f"[bold red]error:[/] {escape(f'{path}: not written: {type(exc).__name__}: {exc}')}")
                code = EXIT_RUNTIME
                continue
            console.print(f"{table} table ({len(df)} rows, {len(df.columns)} columns) written to {escape(str(path))}")
        return code

    raise typer.Exit(_guard(go))
