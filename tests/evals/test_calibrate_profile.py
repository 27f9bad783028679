"""The noise profile's pieces that need no run: the A/A KL between two repeats' stored distributions, the
Clopper-Pearson shares, and a profile that does not read or belongs to another run key (exit 2, never ignored)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evalrun.contract.errors import ConfigError
from evalrun.evals.calibrate import NoiseProfile, load_profile, save_profile
from evalrun.evals.calibrate._measure import _as_forced
from evalrun.evals.drift import token_drift
from evalrun.evals.stats import Share
from evalrun.runners.logprobs import TokenDists


def _dists(ids: list[int], top: np.ndarray) -> TokenDists:
    logp = np.log(top).astype(np.float32)
    n = len(ids)
    return TokenDists(ids=np.array(ids, np.int32), logprob=logp[:, 0].copy(),
                      top_ids=np.tile(np.array([[5, 6, 7]], np.int32), (n, 1)), top_logprobs=logp,
                      rest_logprob=np.log(np.clip(1 - top.sum(axis=1), 1e-9, None)).astype(np.float32))


def test_identical_repeats_have_no_kl_and_a_moved_distribution_has_some() -> None:
    top = np.array([[0.7, 0.2, 0.05]] * 4)
    a = _dists([5, 5, 5, 5], top)
    pair = _as_forced(a, _dists([5, 5, 5, 5], top))
    assert pair is not None and np.allclose(token_drift(*pair).kl, 0.0, atol=1e-6)
    moved = _as_forced(a, _dists([5, 5, 9, 9], np.array([[0.5, 0.4, 0.05]] * 4)))
    assert moved is not None and len(moved[1].token_logprob) == 2  # only the tokens both answers share
    assert (token_drift(*moved).kl > 0.05).all()
    assert _as_forced(a, _dists([9, 5, 5, 5], top)) is None  # no shared token: nothing to compare


def test_a_share_carries_its_exact_interval() -> None:
    none = Share.of(0, 66)
    assert none.low == 0.0 and 0.05 < none.high < 0.06  # 0 of 66 still allows 5.4%
    some = Share.of(4, 66)
    assert some.low < 4 / 66 < some.high and some.text.startswith("4/66 (6.1%")


def test_a_profile_that_does_not_read_or_is_another_keys_is_refused(tmp_path: Path) -> None:
    assert load_profile(tmp_path) is None
    (tmp_path / "noise-profile.json").write_text("{not json")
    with pytest.raises(ConfigError, match="noise-profile.json.*cannot be read"):
        load_profile(tmp_path)
    rates = {"false_fail": Share.of(0, 3).model_dump(), "incomplete": 0, "rules": {}}
    profile = NoiseProfile(config="base", key="a" * 64, runs=["x", "x-r1", "x-r2"], how="re-asked", items=1,
                           confidence=0.95, gate={}, scopes=[], unstable=[], fields=1, kl_floor=None, speed=[],
                           with_profile=rates, without_profile=rates, power=[], plants=1)
    save_profile(tmp_path, profile)
    assert load_profile(tmp_path, "a" * 64) == profile
    with pytest.raises(ConfigError, match="measured on run key aaaaaaaaaaaa, this run is bbbbbbbbbbbb"):
        load_profile(tmp_path, "b" * 64)
