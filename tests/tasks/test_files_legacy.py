"""The original `files` form (`fields: {name: type}` with one `prompt` per row) builds
byte-identical items to the ones it built before named packs, per-field questions and
json mode existed: the expected digests were frozen from that code."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalrun.contract.types import Item
from evalrun.evals.files import jsonl
from evalrun.tasks import BuildOptions, get_pack

ROWS = [
    {"doc": "Invoice A-17 from Alpha GmbH. Total due: EUR 1,234.50. Due 14.03.2024. Paid in euro.",
     "total_due": "EUR 1234.50", "due": "2024-03-14", "cur": "euro", "ref": "a1", "kind": "invoice"},
    {"doc": "Invoice B-2 from Beta AG. Total due: CHF 99.00. " + "Terms and conditions apply here. " * 40,
     "total_due": "CHF 99.00", "due": "", "cur": "CHF", "ref": "b2", "kind": "invoice"},
    {"doc": "Credit note C-9. Amount: EUR 5.00.", "total_due": "EUR 5.00", "due": "2024-01-02", "cur": "EUR",
     "ref": "c3", "kind": "credit note"},
]

VARIANTS: dict[str, tuple[dict[str, Any], BuildOptions]] = {
    "one_field": ({"prompt": "{doc}\n\nWhat is the total?", "fields": {"total_due": "amount"}, "id_column": "ref",
                   "system": "You read {kind}s."}, BuildOptions()),
    "several_fields": ({"prompt": "Read this {kind}:\n{doc}\nAnswer in JSON.",
                        "fields": {"total": "amount", "due": "date", "cur": "enum"},
                        "gold_columns": {"total": "total_due"}, "nullable": ["due"],
                        "field_options": {"cur": {"allowed": ["EUR", "CHF"], "synonyms": {"euro": "EUR"}}}},
                       BuildOptions()),
    "truncated": ({"prompt": "{doc}\n\nWhat is the total?", "fields": {"total_due": "amount"}, "truncate": True},
                  BuildOptions(max_prompt_tokens=60)),
    "truncated_system": ({"prompt": "{doc}\n\nWhat is the total?", "fields": {"total_due": "amount"},
                          "truncate": True, "system": "You read {kind}s.", "id_column": "ref"},
                         BuildOptions(max_prompt_tokens=70)),
    "limited": ({"prompt": "{doc}\nTotal?", "fields": {"total_due": "amount"}, "answer_format": "json"},
                BuildOptions(limit=2, max_prompt_tokens=1000)),
}

# sha256 of the items' canonical JSON lines in order, built by the code before this change
# (several_fields: with the enum reader's cache no longer leaking into the options, see below)
FROZEN = {
    "limited": "7f4b2c08249aeafadbdf9dc2639a979677eb92ecdc13153bca1d8176b8512b38",
    "one_field": "c2aa71e8e8f20e29fbaf2c6c8d6f3b40d54ab700489733586a4c33a7912fbcc4",
    "several_fields": "cdf4ae00ae12ba9991c53cf18b8a0a9a3504ffe5483a115c7cd0c29d2722c9a7",
    "truncated": "801d0dd194f059c81b45fa78af939bb181a2b3718f0f90fde7f55f9055ff5e59",
    "truncated_system": "72224b3d711558d1d446c510b7195a712bd2f0a6cca03c87d0040ce6112eba20",
}


def words(text: str) -> int:
    return len(text.split())


def legacy_items(tmp_path: Path, variant: str) -> list[Item]:
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    params, options = VARIANTS[variant]
    spec = get_pack("files")
    return spec.items(spec.params.model_validate({"path": str(path), **params}), words, options)


def digest(items: list[Item]) -> str:
    return hashlib.sha256("\n".join(jsonl.canonical(it) for it in items).encode()).hexdigest()


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_original_form_builds_the_same_items(tmp_path: Path, variant: str) -> None:
    assert digest(legacy_items(tmp_path, variant)) == FROZEN[variant]


def test_the_original_form_keeps_its_ids_pack_and_options(tmp_path: Path) -> None:
    items = legacy_items(tmp_path, "several_fields")
    assert [it.id for it in items] == ["files/0", "files/1", "files/2"]
    assert {it.pack for it in items} == {"files"} and items[0].answer_format == "json"
    assert items[0].context is None and items[0].question is None
    assert items[0].fields[1].options == {}  # no date_order unless the config gives one
    assert items[1].fields[1].gold is None


_CHILD = """
import sys, tempfile
from pathlib import Path
from tests.tasks.test_files_legacy import digest, legacy_items
with tempfile.TemporaryDirectory() as d:
    print(digest(legacy_items(Path(d), sys.argv[1])))
"""


@pytest.mark.slow
def test_enum_options_are_the_configured_ones_in_any_process(tmp_path: Path) -> None:
    """Reading an enum gold caches a lookup table in the options dict it is given; that must not be
    the field's own options, or the cache (a frozenset, ordered by the hash seed) reaches items.jsonl."""
    items = legacy_items(tmp_path, "several_fields")
    assert items[0].fields[2].options == {"allowed": ["EUR", "CHF"], "synonyms": {"euro": "EUR"}}
    root = Path(__file__).resolve().parents[2]
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", _CHILD, "several_fields"], cwd=root, capture_output=True,
                             text=True, check=True, timeout=120, env={**os.environ, "PYTHONHASHSEED": seed})
        assert out.stdout.split()[-1] == FROZEN["several_fields"]
