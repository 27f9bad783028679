"""Drift mechanics without a model: the estimator on known distributions, the sidecar's
round trip and its integrity checks (a truncated or changed file is never read as numbers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evalrun.evals.store import dists as dists_store
from evalrun.evals.drift import token_drift
from evalrun.runners.logprobs import ForcedDists, TokenDists


def _dists(p: np.ndarray, q: np.ndarray, k: int) -> tuple[TokenDists, ForcedDists]:
    """Records of one token: baseline distribution p (its top-k kept), candidate q read at them."""
    order = np.argsort(-p)
    top = order[:k]
    rest_b = np.log(p[order[k:]].sum()) if k < p.size else -np.inf
    base = TokenDists(ids=np.array([top[0]], np.int32), logprob=np.log(p[top[:1]]).astype(np.float32),
                      top_ids=top[None, :].astype(np.int32), top_logprobs=np.log(p[top])[None, :].astype(np.float32),
                      rest_logprob=np.array([rest_b], np.float32))
    cand = ForcedDists(at_base_top=np.log(q[top])[None, :].astype(np.float32),
                       rest_logprob=np.array([np.log(q[order[k:]].sum()) if k < p.size else -np.inf], np.float32),
                       token_logprob=np.log(q[top[:1]]).astype(np.float32),
                       top1_id=np.array([np.argmax(q)], np.int32), top1_logprob=np.log(q.max(keepdims=True)).astype(np.float32))
    return base, cand


P = np.array([0.5, 0.2, 0.15, 0.1, 0.05])
Q = np.array([0.3, 0.35, 0.1, 0.05, 0.2])
FULL_KL = float((P * np.log(P / Q)).sum())


def test_estimator_is_the_coarsened_kl_a_lower_bound_exact_with_one_rest_entry() -> None:
    base, cand = _dists(P, Q, 4)  # the rest is one entry: the coarsening loses nothing
    assert token_drift(base, cand).kl[0] == pytest.approx(FULL_KL, rel=1e-5)
    base, cand = _dists(P, Q, 2)
    coarse = 0.5 * np.log(0.5 / 0.3) + 0.2 * np.log(0.2 / 0.35) + 0.3 * np.log(0.3 / 0.35)
    row = token_drift(base, cand)
    assert row.kl[0] == pytest.approx(coarse, rel=1e-5)
    assert row.kl[0] < FULL_KL  # log-sum inequality: never above the full KL
    assert not row.same_top1[0]  # the candidate prefers token 1
    assert row.dp[0] == pytest.approx(0.3 - 0.5, abs=1e-6)
    assert row.margin[0] == pytest.approx(0.3, abs=1e-6)


def test_identical_distributions_give_zero() -> None:
    base, cand = _dists(P, P, 2)
    row = token_drift(base, cand)
    assert row.kl[0] == 0.0 and row.same_top1[0] and row.dp[0] == 0.0


def _record(n: int = 3, k: int = 4, seed: int = 0) -> TokenDists:
    rng = np.random.default_rng(seed)
    return TokenDists(ids=rng.integers(0, 100, n).astype(np.int32), logprob=rng.normal(size=n).astype(np.float32),
                      top_ids=rng.integers(0, 100, (n, k)).astype(np.int32),
                      top_logprobs=rng.normal(size=(n, k)).astype(np.float32),
                      rest_logprob=rng.normal(size=n).astype(np.float32))


def test_sidecar_round_trip_and_size(tmp_path: Path) -> None:
    writer = dists_store.DistWriter(tmp_path)
    a, b = _record(3, 20), _record(5, 20, seed=1)
    writer.append("a", a)
    writer.append("b", b)
    got = dists_store.read(tmp_path, TokenDists)
    assert got.problems == [] and set(got.records) == {"a", "b"}
    for name, rec in (("a", a), ("b", b)):
        for field in ("ids", "logprob", "top_ids", "top_logprobs", "rest_logprob"):
            assert np.array_equal(getattr(got.records[name], field), getattr(rec, field))
    assert (tmp_path / "dists.bin").stat().st_size == 8 * dists_store.bytes_per_token(20) == 8 * 172
    summary = dists_store.summary(tmp_path)
    assert summary is not None and summary["items"] == 2 and summary["tokens"] == 8 and summary["top_k"] == 20


def test_a_later_record_for_an_item_wins(tmp_path: Path) -> None:
    writer = dists_store.DistWriter(tmp_path)
    writer.append("a", _record(seed=1))
    writer.append("a", _record(seed=2))
    assert np.array_equal(dists_store.read(tmp_path, TokenDists).records["a"].ids, _record(seed=2).ids)
    # a later record of a batch generated again (re-timed, re-asked) is passed over for the stored answer's
    answer = _record(seed=1).ids.tolist()
    got = dists_store.read(tmp_path, TokenDists, answers={"a": answer})
    assert got.records["a"].ids.tolist() == answer and got.problems == []
    got = dists_store.read(tmp_path, TokenDists, answers={"a": [1, 2]})
    assert got.records == {} and "not its stored answer's tokens" in got.problems[0]


def test_truncated_or_changed_file_is_detected_never_used(tmp_path: Path) -> None:
    writer = dists_store.DistWriter(tmp_path)
    writer.append("a", _record(seed=1))
    writer.append("b", _record(seed=2))
    path = tmp_path / "dists.bin"
    raw = path.read_bytes()
    path.write_bytes(raw[:-5])  # truncated: b's record is cut short
    got = dists_store.read(tmp_path, TokenDists)
    assert set(got.records) == {"a"}
    assert len(got.problems) == 1 and "'b'" in got.problems[0] and "cut short" in got.problems[0]
    changed = bytearray(raw)
    changed[3] ^= 0xFF  # a's bytes changed
    path.write_bytes(bytes(changed))
    got = dists_store.read(tmp_path, TokenDists)
    assert set(got.records) == {"b"} and "sha256" in got.problems[0]


def test_no_sidecar_is_no_record(tmp_path: Path) -> None:
    got = dists_store.read(tmp_path, TokenDists)
    assert not got.present and got.records == {} and dists_store.summary(tmp_path) is None
