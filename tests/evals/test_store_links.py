"""The store never leaves its folder: a symbolic link planted in a run directory (a restored CI
cache, a shared runs/ folder) as any file the store opens, or as the run directory itself, is
refused naming the path (a ConfigError: exit 2), and the file it points to is left untouched.
One test per file kind, through the store operation (or command) that opens it."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable

import pytest

from evalrun.contract.types import Reask, Retiming
from evalrun.evals import api
from evalrun.evals.files import ConfigError
from evalrun.evals.run import execute
from evalrun.evals.store import RunStore, run_lock
from evalrun.evals.results import RunResult
from tests.conftest import make_report, run_cli, write_runs
from tests.evals.fake_runs import gold_run
from tests.fakes.runs import generation

GEN = generation("needle/L512-D0.00-0", "7001000", prompt_hash="0")  # one answer, for the writes refused

VICTIM = b"a file outside the store, which evalrun must never open\n"


@pytest.fixture(scope="module")
def report():  # type: ignore[no-untyped-def]
    return make_report()


@pytest.fixture
def run_dir(tmp_path: Path, report) -> Path:  # type: ignore[no-untyped-def]
    """A stored run (items, samples, manifest) as evalrun writes it."""
    return write_runs(tmp_path / "runs", report)[0]


def _plant(run_dir: Path, name: str) -> tuple[Path, Path]:
    """`<run>/name` made a link to a file outside the store; returns (link, victim)."""
    victim = run_dir.parent.parent / f"victim-{name}"
    victim.write_bytes(VICTIM)
    link = run_dir / name
    link.unlink(missing_ok=True)
    link.symlink_to(victim)
    return link, victim


def _refused(action: Callable[[], object], path: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        action()
    assert str(exc.value).startswith(f"{path}: is a symbolic link"), str(exc.value)
    assert "\n" not in str(exc.value)


def _untouched(link: Path, victim: Path) -> None:
    assert victim.read_bytes() == VICTIM, "the file the link points to was written"
    assert link.is_symlink(), "the planted link itself is left for the user to see"


def test_a_link_as_lock_is_refused_and_its_target_not_truncated(run_dir: Path) -> None:
    link, victim = _plant(run_dir, "lock")

    def hold() -> None:
        with run_lock(run_dir, log=lambda _m: None):
            pass

    _refused(hold, link)
    _untouched(link, victim)


def test_a_link_as_samples_is_refused_for_reading_and_appending(run_dir: Path) -> None:
    link, victim = _plant(run_dir, "samples.jsonl")
    store = RunStore(run_dir)
    _refused(store.read_samples, link)
    _refused(lambda: store.read_samples(repair=True), link)
    _refused(lambda: store.append(GEN), link)
    _untouched(link, victim)


def test_a_link_as_items_is_refused_for_reading_and_appending(run_dir: Path, report) -> None:  # type: ignore[no-untyped-def]
    link, victim = _plant(run_dir, "items.jsonl")
    store = RunStore(run_dir)
    _refused(store.read_items, link)
    _refused(lambda: store.write_items(report.baseline.items), link)
    _refused(lambda: store.vouched_item_rows({"items_sha256": "0" * 64}), link)
    _untouched(link, victim)


@pytest.mark.parametrize("trust", [False, True])
def test_a_link_as_manifest_is_refused_even_when_trusting_edited_items(run_dir: Path, trust: bool) -> None:
    link, victim = _plant(run_dir, "manifest.json")
    store = RunStore(run_dir)
    _refused(store.read_manifest, link)
    _refused(lambda: RunResult.load(run_dir, trust_edited_items=trust), link)
    _refused(lambda: store.write_manifest({"status": "complete"}), link)
    _untouched(link, victim)


def test_a_link_as_scores_is_refused_by_rescore(run_dir: Path) -> None:
    link, victim = _plant(run_dir, "scores.jsonl")
    _refused(lambda: api.rescore(run_dir, log=lambda _m: None), link)
    _untouched(link, victim)


def test_a_link_as_confirmations_is_refused(run_dir: Path) -> None:
    link, victim = _plant(run_dir, "confirmations.jsonl")
    store = RunStore(run_dir)
    _refused(store.read_confirmations, link)
    _refused(lambda: store.append_confirmation(Reask(attempt=1, batch_size=1, seed=None, generation=GEN)), link)
    _untouched(link, victim)


def test_a_link_as_interleaved_is_refused(run_dir: Path) -> None:
    link, victim = _plant(run_dir, "interleaved.jsonl")
    store = RunStore(run_dir)
    _refused(lambda: store.read_interleaved("0" * 64), link)
    retiming = Retiming(baseline_key="0" * 64, pair=0, side="baseline", first=True, generation=GEN)
    _refused(lambda: store.append_interleaved([retiming]), link)
    _untouched(link, victim)


def test_a_torn_tail_is_never_moved_into_a_linked_side_file(run_dir: Path) -> None:
    """The side file for a torn tail is created new (O_EXCL): a link already at a name is skipped."""
    from evalrun.evals.files import store_files

    side, victim = _plant(run_dir, "samples.jsonl.torn-x")
    assert store_files.create_new(side, b"torn bytes") is False
    _untouched(side, victim)
    samples = run_dir / "samples.jsonl"
    samples.write_bytes(samples.read_bytes() + b'{"item_id": "torn')
    RunStore(run_dir).read_samples(repair=True)
    (moved,) = [p for p in run_dir.glob("samples.jsonl.torn-*") if not p.is_symlink()]
    assert moved.read_bytes() == b'{"item_id": "torn'
    _untouched(side, victim)


def test_a_fifo_planted_as_a_store_file_is_refused_not_waited_on(run_dir: Path) -> None:
    """Not a link, but not the store's file either: reading it would block for ever."""
    fifo = run_dir / "samples.jsonl"
    fifo.unlink()
    os.mkfifo(fifo)
    store = RunStore(run_dir)
    for action in (store.read_samples, lambda: store.append(GEN)):
        with pytest.raises(ConfigError, match="is not a regular file"):
            action()


def test_a_run_directory_that_is_a_link_is_refused(run_dir: Path) -> None:
    elsewhere = run_dir.parent.parent / "elsewhere"
    run_dir.rename(elsewhere)
    run_dir.symlink_to(elsewhere, target_is_directory=True)
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in elsewhere.iterdir()}
    store = RunStore(run_dir)
    for action in (store.read_manifest, store.read_items, store.read_samples, lambda: store.append(GEN),
                   lambda: store.write_manifest({"status": "complete"}), lambda: RunResult.load(run_dir)):
        _refused(action, run_dir)

    def hold() -> None:
        with run_lock(run_dir, log=lambda _m: None):
            pass

    _refused(hold, run_dir)
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in elsewhere.iterdir()} == before


def test_execute_refuses_a_linked_manifest_without_moving_or_replacing_it(tmp_path: Path) -> None:
    """`execute` keeps an unreadable manifest aside and rebuilds it; a link is no manifest of the run:
    refused, never renamed (the link stays), never written through."""
    prepared = gold_run(tmp_path)
    execute(prepared, log=lambda _m: None)
    link, victim = _plant(prepared.dir, "manifest.json")
    _refused(lambda: execute(prepared, log=lambda _m: None), link)
    _untouched(link, victim)
    assert not list(prepared.dir.glob("manifest.json.unreadable-*"))


@pytest.mark.parametrize("name", ["samples.jsonl", "lock", "items.jsonl"])
def test_execute_never_writes_through_a_link(tmp_path: Path, name: str) -> None:
    prepared = gold_run(tmp_path)
    execute(prepared, log=lambda _m: None)
    lines = (prepared.dir / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (prepared.dir / "samples.jsonl").write_bytes(b"".join(lines[:2]))  # four items still to generate
    link, victim = _plant(prepared.dir, name)
    _refused(lambda: execute(prepared, log=lambda _m: None), link)
    _untouched(link, victim)


@pytest.mark.slow
def test_cli_report_and_rescore_exit_2_naming_the_link(tmp_path: Path, report) -> None:  # type: ignore[no-untyped-def]
    dirs = write_runs(tmp_path / "runs", report)
    link, victim = _plant(dirs[1], "samples.jsonl")
    res = run_cli("report", *map(str, dirs[:2]))
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"{link}: is a symbolic link" in " ".join(res.stderr.split())
    scores, scores_victim = _plant(dirs[0], "scores.jsonl")
    res = run_cli("rescore", str(dirs[0]))
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"{scores}: is a symbolic link" in " ".join(res.stderr.split())
    _untouched(link, victim)
    _untouched(scores, scores_victim)
    assert json.loads((dirs[0] / "manifest.json").read_text())["name"] == "baseline"
