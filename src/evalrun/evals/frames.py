"""Stored runs as pandas DataFrames, for notebooks and `evalrun export` (docs/dataframes.md). Runs are read,
scored, timed and paired by the same code as `report` and the gate: nothing here decides anything. The
columns and their nullable dtypes are fixed once (SAMPLE_COLUMNS, FIELD_COLUMNS), for the docs and tests too."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Sequence

from evalrun.contract.types import Generation
from evalrun.evals.timing import latency
from evalrun.evals.api import score
from evalrun.evals.run import RunFailed
from evalrun.evals.compare import pair
from evalrun.evals.results import RunResult, StoredRows, load_rows, load_stored
from evalrun.evals.scoring import ScoredItem
from evalrun.evals.speed import method_label

if TYPE_CHECKING:
    import pandas as pd

RunDirs = Sequence[str | Path]
Table = Literal["samples", "fields"]
Format = Literal["parquet", "csv"]

# what identifies a row's run and item, first in both tables
_RUN = {"run": "string", "config": "string", "acceleration": "string", "pack": "string", "item": "string"}
# the generation's timing, by evals.timing.latency's definitions (seconds; NA where undefined or errored)
_TIMING = {"ttft": "Float64", "tpot": "Float64"}

SAMPLE_COLUMNS: dict[str, str] = {
    **_RUN, "prompt_hash": "string", "output": "string", "error": "string",
    "prompt_tokens": "Int64", "new_tokens": "Int64", **_TIMING, "e2el": "Float64",
    "seconds": "Float64", "batch_size": "Int64", "fields": "Int64",
}

FIELD_COLUMNS: dict[str, str] = {
    **_RUN, "field": "string", "type": "string", "gold": "string", "prediction": "string",
    "outcome": "string", "subcode": "string", "correct": "boolean", "flip": "string",
    "prompt_tokens": "Int64", **_TIMING, "error": "string",
}

COLUMNS: dict[Table, dict[str, str]] = {"samples": SAMPLE_COLUMNS, "fields": FIELD_COLUMNS}


def _frame(columns: dict[str, list[Any]], dtypes: dict[str, str]) -> "pd.DataFrame":
    import pandas as pd

    data: dict[str, Any] = {}
    for name, dtype in dtypes.items():
        try:  # the stubs take literal dtypes only
            data[name] = pd.array(columns[name], dtype=dtype)  # type: ignore[call-overload]
        except UnicodeEncodeError:
            raise RunFailed(_unencodable(columns, name)) from None
    frame: pd.DataFrame = pd.DataFrame(data)  # pandas-stubs type the constructor's result from Python 3.11 on
    return frame


def _unencodable(columns: dict[str, list[Any]], name: str) -> str:
    """The store keeps any Unicode (a lone surrogate too), a table's strings are UTF-8: said, never replaced."""
    row = next(i for i, v in enumerate(columns[name]) if isinstance(v, str) and not v.isascii()
               and any("\ud800" <= c <= "\udfff" for c in v))  # the one text UTF-8 cannot encode
    return (f"{columns['run'][row]}: item {columns['item'][row]!r}: its {name} holds a lone surrogate, which a "
            "table's UTF-8 text cannot hold (the stored run keeps it; read it with RunStore.read_samples)")


def _run_facts(run: RunResult | StoredRows) -> dict[str, str]:
    return {"run": run.dir.name, "config": run.name, "acceleration": method_label(run.manifest.to_dict())}


def _add_run(cols: dict[str, list[Any]], facts: dict[str, str], pack: str, item: str, n: int) -> None:
    for name, value in (*facts.items(), ("pack", pack), ("item", item)):
        cols[name].extend([value] * n)


def _add_timing(cols: dict[str, list[Any]], gen: Generation, n: int) -> None:
    cols["prompt_tokens"].extend([gen.prompt_tokens] * n)
    cols["ttft"].extend([latency.ttft(gen)] * n)
    cols["tpot"].extend([latency.tpot(gen)] * n)
    cols["error"].extend([gen.error] * n)


def samples_df(run_dirs: RunDirs, trust_edited_items: bool = False,
               log: Callable[[str], None] | None = print) -> "pd.DataFrame":
    """One row per stored generation, in item order; unscored, since scoring is most of a table's cost
    (docs/dataframes.md)."""
    cols: dict[str, list[Any]] = {name: [] for name in SAMPLE_COLUMNS}
    for run in [load_rows(d, trust_edited_items, log) for d in run_dirs]:
        facts = _run_facts(run)
        for item_id, pack, n_fields in run.items:
            gen = run.generations.get(item_id)
            if gen is None:
                continue
            _add_run(cols, facts, pack, item_id, 1)
            _add_timing(cols, gen, 1)
            for name, value in (("prompt_hash", gen.prompt_hash), ("output", gen.output),
                                ("new_tokens", gen.new_tokens), ("e2el", latency.e2el(gen)),
                                ("seconds", gen.seconds), ("batch_size", gen.batch_size),
                                ("fields", n_fields)):
                cols[name].append(value)
    return _frame(cols, SAMPLE_COLUMNS)


def _flips(base: list[ScoredItem], scored: list[ScoredItem], names: tuple[str, str]) -> dict[tuple[str, str], str]:
    """(item, field) -> "harmful" | "helpful" | "" for every paired field (unpaired ones absent: NA)."""
    comparison = pair(base, scored, *names, n_resamples=1)  # its flips only: no interval is read here
    answered = {s.item_id for s in scored}  # `pair` compares the baseline's fields of items both runs answered
    out = dict.fromkeys(((b.item_id, name) for b in base if b.item_id in answered for name in b.fields), "")
    out |= {f.key: "harmful" for f in comparison.harmful}
    out |= {f.key: "helpful" for f in comparison.helpful}
    return out


def fields_df(run_dirs: RunDirs, baseline: str | Path | None = None, trust_edited_items: bool = False,
              log: Callable[[str], None] | None = print) -> "pd.DataFrame":
    """One row per stored generation and asked field; with `baseline` (which may be among `run_dirs`), `flip`
    is how each field moved against it, as the gate pairs runs (docs/dataframes.md)."""
    runs = [load_stored(d, trust_edited_items, log) for d in run_dirs]
    base = None
    if baseline is not None:  # the baseline among the runs is read and scored once
        target = Path(baseline).resolve()
        base = next((r for r in runs if r.dir.resolve() == target), None) or \
            load_stored(baseline, trust_edited_items, log)
    base_scored = score(base) if base is not None else []
    cols: dict[str, list[Any]] = {name: [] for name in FIELD_COLUMNS}
    for run in runs:
        facts = _run_facts(run)
        scored = base_scored if run is base else score(run)
        flips = _flips(base_scored, scored, (base.name, run.name)) if base is not None else {}
        for s in scored:
            n = len(s.fields)
            _add_run(cols, facts, s.pack, s.item_id, n)
            _add_timing(cols, run.generations[s.item_id], n)
            for name, fs in s.fields.items():
                for col, value in (("field", name), ("type", s.kinds[name]), ("gold", s.golds[name]),
                                   ("prediction", fs.pred_norm), ("outcome", fs.outcome), ("subcode", fs.subcode),
                                   ("correct", s.field_right(name)), ("flip", flips.get((s.item_id, name)))):
                    cols[col].append(value)
    return _frame(cols, FIELD_COLUMNS)


def frame_bytes(df: "pd.DataFrame", fmt: Format) -> bytes:
    """Parquet keeps every dtype and tells NA from ""; CSV cannot. Cells are written as stored, a leading `=`
    included (no quote prefixed): the export is the data, byte for byte, not a spreadsheet."""
    if fmt == "parquet":
        buf = io.BytesIO()
        df.to_parquet(buf, engine="pyarrow", index=False)
        return buf.getvalue()
    import csv

    return df.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n").encode("utf-8")


def read_csv(path: str | Path, table: Table = "fields") -> "pd.DataFrame":
    """An exported CSV read back with the documented dtypes (an empty cell is NA)."""
    import pandas as pd

    return pd.read_csv(path, dtype=COLUMNS[table], keep_default_na=False, na_values=[""], encoding="utf-8")
