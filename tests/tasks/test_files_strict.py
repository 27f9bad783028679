"""The `files` pack with damaged data: every problem is a configuration error (exit 2)
naming the data row and column or the template key, never an internal error later."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from evalrun.evals.files import ConfigError
from evalrun.evals.config import load_config
from evalrun.evals.run import prepare
from evalrun.tasks import BuildOptions, PackDataError, get_pack
from evalrun.tasks.files._fit import count_within
from tests.conftest import run_cli

ROW = {"doc": "Invoice A. Total due: EUR 1,234.50.", "total": "EUR 1234.50", "ref": "a1"}


def _data(tmp_path: Path, rows: list, name: str = "docs.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _cfg(tmp_path: Path, data: str = "docs.jsonl", **task) -> Path:
    entry = {"pack": "files", "path": data, "prompt": "{doc}\nWhat is the total?", "fields": {"total": "amount"}}
    entry.update(task)
    body: dict = {"name": "f", "tasks": [entry]}
    if "model" in task:
        body["model"] = entry.pop("model")
    path = tmp_path / "files.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def _error(cfg: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    return info.value


@pytest.mark.slow
def test_jsonl_of_scalars_names_the_line_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "docs.jsonl").write_text(json.dumps(ROW) + "\n42\n")
    cfg = _cfg(tmp_path)
    err = _error(cfg)
    assert err.path == "tasks[0].path" and "docs.jsonl: line 2 is int 42, expected a JSON object" in str(err)
    res = run_cli("run", str(cfg), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2, res.stderr
    assert "line 2" in res.stderr and "files.yaml" in res.stderr and "Traceback" not in res.stderr


def test_invalid_json_line_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "docs.jsonl").write_text(json.dumps(ROW) + "\n{oops\n")
    assert "line 2 is not valid JSON" in str(_error(_cfg(tmp_path)))


@pytest.mark.parametrize("template", ["{doc} {}", "{doc!z}", "{doc:d}", "{0}", "{doc.upper}", "{doc[0]}", "{doc"])
def test_bad_templates_are_config_errors_at_the_prompt(tmp_path: Path, template: str) -> None:
    _data(tmp_path, [ROW])
    err = _error(_cfg(tmp_path, prompt=template))
    assert err.path == "tasks[0].prompt", str(err)


@pytest.mark.slow
def test_bad_template_exits_2_via_cli(tmp_path: Path) -> None:
    _data(tmp_path, [ROW])
    res = run_cli("run", str(_cfg(tmp_path, prompt="{doc:d}")), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2 and "tasks[0].prompt" in res.stderr, res.stderr


def test_bad_system_template_is_named(tmp_path: Path) -> None:
    _data(tmp_path, [ROW])
    assert _error(_cfg(tmp_path, system="You read {doc!z}")).path == "tasks[0].system"


def test_literal_braces_still_work(tmp_path: Path) -> None:
    _data(tmp_path, [ROW])
    params = load_config(_cfg(tmp_path, prompt='{doc}\nAnswer as {{"total": ...}}')).tasks[0].params
    (item,) = get_pack("files").items(params, lambda s: 1)
    assert item.prompt.endswith('Answer as {"total": ...}')


@pytest.mark.parametrize(
    "row, shown",
    [
        ({"doc": "x"}, "missing"),  # the column exists in another row only
        ({"doc": "x", "total": None}, "missing"),
        ({"doc": "x", "total": ""}, "empty"),
        ({"doc": "x", "total": "  "}, "empty"),
        ({"doc": "x", "total": "N/A"}, "empty"),
    ],
)
def test_absent_gold_is_an_error_naming_row_and_column(tmp_path: Path, row: dict, shown: str) -> None:
    _data(tmp_path, [ROW, row])
    err = _error(_cfg(tmp_path))
    assert err.path == "tasks[0].fields.total", str(err)
    assert "docs.jsonl: row 1 (line 2), column 'total'" in str(err) and shown in str(err)
    assert "nullable" in str(err)


def test_nan_gold_is_absent_too(tmp_path: Path) -> None:
    (tmp_path / "docs.jsonl").write_text(json.dumps(ROW) + '\n{"doc": "x", "total": NaN}\n')
    assert "row 1 (line 2), column 'total'" in str(_error(_cfg(tmp_path)))


def test_absent_gold_error_names_the_id(tmp_path: Path) -> None:
    _data(tmp_path, [ROW, {"doc": "x", "total": "", "ref": "b2"}])
    assert "row 1 (line 2) (id 'b2'), column 'total'" in str(_error(_cfg(tmp_path, id_column="ref")))


def test_nullable_field_makes_absent_golds_decoys(tmp_path: Path) -> None:
    _data(tmp_path, [ROW, {"doc": "x", "total": None}, {"doc": "y", "total": float("nan")}])
    params = load_config(_cfg(tmp_path, nullable=["total"])).tasks[0].params
    items = get_pack("files").items(params, lambda s: 1)
    assert [it.fields[0].gold for it in items] == ["EUR 1234.50", None, None]


def test_nullable_must_name_a_field(tmp_path: Path) -> None:
    _data(tmp_path, [ROW])
    err = _error(_cfg(tmp_path, nullable=["tax"]))
    assert err.path == "tasks[0].nullable" and "'tax'" in str(err)


@pytest.mark.parametrize(
    "kind, gold",
    [("amount", "not an amount"), ("date", "2024-02-30"), ("date", "14 Smarch 2024"), ("number", "twelve"),
     ("enum", "maybe")],
)
def test_gold_that_is_not_a_value_of_its_type_is_an_error(tmp_path: Path, kind: str, gold: str) -> None:
    _data(tmp_path, [{"doc": "x", "v": gold}])
    options = {"v": {"allowed": ["paid", "open"]}} if kind == "enum" else {}
    err = _error(_cfg(tmp_path, fields={"v": kind}, field_options=options))
    assert err.path == "tasks[0].fields.v" and f"row 0 (line 1), column 'v': the gold {gold!r} is not" in str(err)


@pytest.mark.slow
def test_gold_errors_exit_2_via_cli(tmp_path: Path) -> None:
    _data(tmp_path, [ROW, {"doc": "x", "total": "not an amount"}])
    res = run_cli("run", str(_cfg(tmp_path)), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2 and "row 1 (line 2), column 'total'" in res.stderr, res.stderr


def test_object_gold_is_an_error(tmp_path: Path) -> None:
    _data(tmp_path, [{"doc": "x", "total": {"value": 5}}])
    assert "not a single value" in str(_error(_cfg(tmp_path)))


def test_twenty_digit_integer_gold_stays_exact(tmp_path: Path) -> None:
    (tmp_path / "docs.jsonl").write_text('{"doc": "Ref 12345678901234567890", "n": 12345678901234567890, '
                                         '"amt": 14851.20}\n')
    params = load_config(_cfg(tmp_path, fields={"n": "number", "amt": "number"})).tasks[0].params
    (item,) = get_pack("files").items(params, lambda s: 1)
    assert [f.gold for f in item.fields] == ["12345678901234567890", "14851.20"]


def test_json_array_file_keeps_big_ints(tmp_path: Path) -> None:
    (tmp_path / "docs.json").write_text('[{"doc": "x", "n": 12345678901234567890}]')
    params = load_config(_cfg(tmp_path, "docs.json", fields={"n": "number"})).tasks[0].params
    assert get_pack("files").items(params, lambda s: 1)[0].fields[0].gold == "12345678901234567890"


def test_limit_tokenizes_only_the_rows_used(tmp_path: Path) -> None:
    _data(tmp_path, [{**ROW, "ref": f"r{i}"} for i in range(500)])
    params = load_config(_cfg(tmp_path)).tasks[0].params
    calls: list[int] = []

    def count(text: str) -> int:
        calls.append(len(text))
        return len(text.split())

    items = get_pack("files").items(params, count, BuildOptions(limit=2, max_prompt_tokens=1000))
    assert len(items) == 2 and len(calls) <= 4


def test_max_rows_reads_no_further(tmp_path: Path) -> None:
    (tmp_path / "docs.jsonl").write_text(json.dumps(ROW) + "\n" + json.dumps(ROW) + "\nnot json at all\n")
    params = load_config(_cfg(tmp_path, max_rows=2)).tasks[0].params
    assert len(get_pack("files").items(params, lambda s: 1)) == 2


def test_count_within_is_bounded_by_the_budget() -> None:
    text = "word " * 2_000_000
    tokenized: list[int] = []

    def count(t: str) -> int:
        tokenized.append(len(t))
        return len(t.split())

    assert count_within(text, count, 4000) is None
    assert sum(tokenized) < 200_000  # not the 10 MB of text
    assert count_within("a b c", count, 3) == 3 and count_within("a b c d", count, 3) is None
    spaces = " " * 1_000_000 + "end"  # very compressible: fits, counted exactly
    assert count_within(spaces, count, 10) == 1


@pytest.mark.slow
def test_document_longer_than_the_context_is_an_error(tmp_path: Path, tiny_model_dir: Path) -> None:
    long_doc = "Invoice total due EUR 5.00. " + "lorem ipsum dolor sit amet " * 3000
    _data(tmp_path, [ROW, {"doc": long_doc, "total": "EUR 5.00", "ref": "big"}])
    cfg = _cfg(tmp_path, id_column="ref", model=str(tiny_model_dir))
    with pytest.raises(ConfigError) as info:
        prepare(load_config(cfg), tmp_path / "runs")
    err = info.value
    assert err.file == str(cfg) and err.path == "tasks[0].path"
    assert "row 1 (line 2) (id 'big')" in str(err) and "model context 4096" in str(err) and "truncate" in str(err)
    res = run_cli("run", str(cfg), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2 and "id 'big'" in res.stderr, res.stderr
    # with --limit 1 the long row is never built
    assert len(prepare(load_config(cfg), tmp_path / "runs", limit=1).items) == 1


def test_truncate_cuts_the_document_and_records_it(tmp_path: Path, tiny_model_dir: Path) -> None:
    long_doc = "Invoice total due EUR 5.00. " + "lorem ipsum dolor sit amet " * 3000
    _data(tmp_path, [ROW, {"doc": long_doc, "total": "EUR 5.00", "ref": "big"}])
    cfg = _cfg(tmp_path, id_column="ref", truncate=True, model=str(tiny_model_dir))
    prepared = prepare(load_config(cfg), tmp_path / "runs")
    short, big = prepared.items
    assert "truncated" not in short.meta
    cut = big.meta["truncated"]
    assert cut["column"] == "doc" and 0 < cut["chars_kept"] < cut["chars"] == len(long_doc)
    budget = 4096 - load_config(cfg).generation.max_new_tokens
    assert budget - 20 <= big.meta["context_tokens"] <= budget
    assert big.prompt.endswith("What is the total?")
    assert not math.isnan(big.meta["context_tokens"])


def test_pack_data_error_carries_the_key() -> None:
    assert PackDataError("x", "path").key == "path"


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_jsonl_records_end_at_newline_only(tmp_path: Path, separator: str) -> None:
    """JSON allows these raw inside strings; a reader that splits on them cuts a document in two."""
    doc = f"Invoice A.{separator}Total due: EUR 1,234.50."
    raw = (json.dumps({"doc": doc, "total": "EUR 1234.50"}, ensure_ascii=False) + "\r\n").encode("utf-8")
    (tmp_path / "docs.jsonl").write_bytes(raw * 2)
    params = load_config(_cfg(tmp_path)).tasks[0].params
    items = get_pack("files").items(params, lambda s: 1)
    assert len(items) == 2 and items[0].prompt.startswith(doc)


def _dup_csv(tmp_path: Path) -> None:
    (tmp_path / "docs.csv").write_text('doc,total,ref,total\n"Invoice A. Total due: EUR 1,234.50.",EUR 1234.50,a1,'
                                       "EUR 0.00\n", encoding="utf-8")


def test_a_csv_column_given_twice_is_an_error_naming_file_line_and_column(tmp_path: Path) -> None:
    """pandas would read the second as `total.1`, and the first would be the gold without a word."""
    _dup_csv(tmp_path)
    err = _error(_cfg(tmp_path, "docs.csv"))
    assert err.path == "tasks[0].path" and "docs.csv: line 1: column 'total' appears twice" in str(err)


@pytest.mark.parametrize("line", [1, 2])
def test_a_jsonl_key_given_twice_is_an_error_naming_file_line_and_key(tmp_path: Path, line: int) -> None:
    """json keeps the last of two equal keys: the gold would be whichever came second."""
    rows = [json.dumps(ROW), json.dumps(ROW)]
    rows[line - 1] = rows[line - 1][:-1] + ', "total": "EUR 0.00"}'
    (tmp_path / "docs.jsonl").write_text("\n".join(rows) + "\n")
    err = _error(_cfg(tmp_path))
    assert f"docs.jsonl: line {line}: key 'total' appears twice" in str(err)


def test_a_json_key_given_twice_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "docs.json").write_text("[" + json.dumps(ROW)[:-1] + ', "total": "EUR 0.00"}]')
    assert "docs.json: key 'total' appears twice" in str(_error(_cfg(tmp_path, "docs.json")))


@pytest.mark.slow
def test_duplicate_columns_exit_2_via_check(tmp_path: Path) -> None:
    _dup_csv(tmp_path)
    res = run_cli("check", str(_cfg(tmp_path, "docs.csv")), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "docs.csv: line 1: column 'total' appears twice" in " ".join(res.stderr.split())
