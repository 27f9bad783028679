"""`evalrun calibrate` on a deterministic server with a known noise (docs/gate.md, 'Calibration'): 12 needles,
two of which (an integer and an amount) the server answers wrong on its 1st and 4th ask of them and right on
the 2nd and 3rd; every other answer is always right. With 4 repeats every figure of the profile is known
exactly: per type 4 flips in 66 ordered-pair trials, 2 unstable fields right in 2 of 4 repeats, 2 of the 6
A/A pairs failing the one-run-against-one gate (a right answer lost from repeat 1 or 2 to repeat 3) and none
with the others as replicates. `compare` then gates against the profile by itself and says so."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Iterator

import pytest

from evalrun.evals.calibrate import NoiseProfile, load_profile
from tests.conftest import run_cli
from tests.fakes.openai_server import (
    ExactBackend, OpenAITestServer, exact_answer, gold_answers, items_of, served_config, wrong_answer,
)

pytestmark = pytest.mark.slow  # four runs and 78 gated comparisons: about a minute

NEEDLES = {"pack": "needle_numbers", "lengths": [256, 384], "depths": [0.0, 0.5, 1.0], "values": ["integer", "amount"]}


class Flaky:
    """Gold answers, except the first item of each value type: wrong on its asks 0 and 3, right on 1 and 2."""

    def __init__(self) -> None:
        items = items_of([NEEDLES])
        assert len(items) == 12
        self.by_prompt = {"\n".join([it.system, it.prompt] if it.system else [it.prompt]): it for it in items}
        kinds: dict[str, str] = {}
        for it in items:
            kinds.setdefault(it.fields[0].kind, it.id)
        self.flaky = set(kinds.values())
        assert len(self.flaky) == 2
        self.asks: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        item = self.by_prompt.get(prompt)
        if item is None:
            return "I do not know."
        with self.lock:
            ask = self.asks[item.id] = self.asks.get(item.id, -1) + 1
        return wrong_answer(item) if item.id in self.flaky and ask % 4 in (0, 3) else exact_answer(item)


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, object]]:
    tmp = tmp_path_factory.mktemp("calibrate")
    backend = Flaky()
    with OpenAITestServer(ExactBackend(backend)) as server:
        config = served_config(tmp / "base.yaml", "base", server.base_url, [NEEDLES])
        res = run_cli("calibrate", str(config), "--repeats", "4", "--plants", "10", "--out", str(tmp / "runs"),
                      "--json", str(tmp / "profile.json"))
        assert res.returncode == 0, res.stdout + res.stderr
        yield tmp, config, res


def _profile(tmp: Path) -> NoiseProfile:
    return NoiseProfile.model_validate_json((tmp / "profile.json").read_text())


def test_the_profile_holds_the_known_flip_rates_exactly(calibrated: tuple[Path, Path, object]) -> None:
    tmp, _, res = calibrated
    prof = _profile(tmp)
    assert prof.repeats == 4 and prof.items == 12 and prof.how == "its named server asked again for each repeat"
    assert [(s.pack, s.type, s.flips.k, s.flips.n) for s in prof.scopes] == [
        ("needle_numbers", "amount", 4, 66), ("needle_numbers", "number", 4, 66)]
    assert 0 < prof.scopes[0].flips.low < 4 / 66 < prof.scopes[0].flips.high < 0.2
    assert prof.fields == 12 and [(u.type, u.right) for u in prof.unstable] == [("amount", 2), ("number", 2)] \
        or [(u.type, u.right) for u in prof.unstable] == [("number", 2), ("amount", 2)]
    assert prof.without_profile.false_fail.k == 2 and prof.without_profile.false_fail.n == 6
    assert prof.with_profile.false_fail.k == 0 and prof.with_profile.false_fail.n == 6
    assert prof.replicates  # the answers moved: compare gates with the repeats
    assert prof.without_profile.rules and all(r.startswith("needle_numbers: ") for r in prof.without_profile.rules)
    assert prof.kl_floor is None  # the server stores no logprobs
    assert {s.metric for s in prof.speed} >= {"ttft_p50", "ttft_p99"}
    text = " ".join(res.stdout.split())
    assert "gate false FAIL with the other repeats as replicates: 0/6" in text, text
    assert "gate false FAIL one run against one: 2/6" in text and "compare will gate with the 3 repeats" in text


def test_the_measured_power_matches_the_stated_power(calibrated: tuple[Path, Path, object]) -> None:
    tmp, _, _ = calibrated
    (power,) = _profile(tmp).power
    assert power.pack == "needle_numbers" and power.stated == 0.95 and power.detected.n == 6 * 10
    assert 0 < power.rate < 1 and power.predicted > 0.9 and power.flips > 0  # the median pair's rate
    assert abs(power.detected.rate - power.stated) <= 0.1, power


def test_the_runs_are_ordinary_stored_runs_and_compare_gates_against_the_profile(
        calibrated: tuple[Path, Path, object]) -> None:
    tmp, config, _ = calibrated
    runs = sorted(p.name for p in (tmp / "runs").iterdir())
    assert len(runs) == 4 and runs[1:] == [f"{runs[0]}-r{j}" for j in (1, 2, 3)]
    assert load_profile(tmp / "runs" / runs[0]) is not None
    # the candidate is the same server: a repeat with the noise the profile measured
    res = run_cli("compare", str(config), str(config), "--out", str(tmp / "runs"), "--json", str(tmp / "v.json"))
    text = " ".join((res.stdout + res.stderr).split())
    assert "noise profile" in text and "4 repeats" in text and "measured by calibrate" in text, text
    verdict = json.loads((tmp / "v.json").read_text())["verdicts"][0]
    assert verdict["replicates"] == runs[1:4] or len(verdict["replicates"]) == 3
    assert res.returncode == 0, text
    # `report` of the stored runs gates with the same repeats, so it reads the same profile
    again = run_cli("report", str(tmp / "runs" / runs[0]), str(tmp / "runs" / f"{runs[0]}-r4"))
    assert again.returncode == 0 and "measured by calibrate" in " ".join(again.stdout.split()), again.stdout


def test_fewer_than_three_repeats_is_a_usage_error(tmp_path: Path) -> None:
    res = run_cli("calibrate", str(tmp_path / "none.yaml"), "--repeats", "2")
    assert res.returncode == 2


def test_answers_that_never_move_are_gated_one_run_against_one(tmp_path: Path) -> None:
    """A deterministic engine: with no A/A flip the noise-aware tests could only cost power, so the profile says
    so and `compare` gates every flip, naming the profile."""
    needles = NEEDLES | {"lengths": [256]}
    with OpenAITestServer(ExactBackend(gold_answers(items_of([needles])))) as server:
        config = served_config(tmp_path / "base.yaml", "base", server.base_url, [needles])
        res = run_cli("calibrate", str(config), "--repeats", "3", "--plants", "2", "--out", str(tmp_path / "runs"),
                      "--json", str(tmp_path / "profile.json"))
        assert res.returncode == 0, res.stdout + res.stderr
        prof = _profile(tmp_path)
        assert not prof.replicates and not prof.unstable and prof.aa_flips().k == 0
        assert prof.without_profile.false_fail.k == 0 and prof.power[0].detected.n == 3 * 2
        res = run_cli("compare", str(config), str(config), "--out", str(tmp_path / "runs"), "--json",
                      str(tmp_path / "v.json"))
    text = " ".join((res.stdout + res.stderr).split())
    assert res.returncode == 0 and "the answers did not move between its repeats" in text, text
    assert json.loads((tmp_path / "v.json").read_text())["verdicts"][0]["replicates"] == []
