"""The noise profile `evalrun calibrate` stores beside a config's runs (docs/gate.md, 'Calibration'): how its
answers move between repeats, and the gate's own error rates measured on them, so a verdict can say what its
FAIL and its PASS are worth on this engine instead of assuming it."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError

from evalrun.evals.files import ConfigError, store_files
from evalrun.evals.stats import MeasuredPower, Share

PROFILE = "noise-profile.json"  # in the directory of the config's first run


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScopeNoise(_Record):
    """A/A flips of one pack's fields of one type: over every ordered pair of repeats, the fields right in the
    first that the second got wrong."""

    pack: str
    type: str
    flips: Share


class UnstableField(_Record):
    item: str
    field: str
    pack: str
    type: str
    right: int  # repeats that got it right
    answers: list[str]  # the distinct normalised answers seen ("" for none)


class SpeedSpread(_Record):
    """One latency percentile of every repeat, and the largest over the smallest: what a speed rule must beat."""

    metric: str  # ttft_p50, tpot_p99, ...
    seconds: list[float | None]
    spread: float | None


class GateRates(_Record):
    """The gate's verdicts over the A/A pairs: every FAIL is a false one."""

    false_fail: Share
    incomplete: int
    rules: dict[str, int]  # "pack: rule" -> pairs it failed


class NoiseProfile(_Record):
    version: int = 1
    config: str
    key: str
    runs: list[str]  # directory names, repeat 0 first
    how: str  # how noise arose between repeats (restart, shuffled batches, re-ask)
    items: int
    confidence: float
    gate: dict  # the gate the rates are for, as written
    scopes: list[ScopeNoise]
    unstable: list[UnstableField]
    fields: int
    kl_floor: float | None  # mean per-token KL between repeats' answers where logprobs are stored
    speed: list[SpeedSpread]
    with_profile: GateRates  # each pair gated with the other repeats as replicates
    without_profile: GateRates  # each pair gated as one run against one
    # compare gates with the repeats as replicates: a field was right in only some repeats, or one run against
    # one failed more A/A pairs
    replicates: bool = True
    power: list[MeasuredPower]
    plants: int  # planted comparisons per pair and pack
    _path: Path | None = PrivateAttr(default=None)  # where it was read from or written to

    @property
    def repeats(self) -> int:
        return len(self.runs)

    def aa_flips(self) -> Share:
        k, n = sum(s.flips.k for s in self.scopes), sum(s.flips.n for s in self.scopes)
        return Share.of(k, n, self.confidence)

    def measured(self) -> dict[str, MeasuredPower]:
        """Each pack's measured power, naming this profile, for its power line."""
        return {m.pack: m.model_copy(update={"source": str(self._path or PROFILE)}) for m in self.power}

    def note(self) -> str:
        """The line a verdict gated with this profile starts with."""
        how = ("gated with its repeats as replicates" if self.replicates else
               "gated one run against one: the answers did not move between its repeats, so every flip counts")
        used, other = ((self.with_profile, self.without_profile) if self.replicates
                       else (self.without_profile, self.with_profile))
        return (f"noise profile {self._path or PROFILE} ({self.repeats} repeats, {self.how}): A/A flip rate "
                f"{self.aa_flips().text}, {len(self.unstable)} of {self.fields} fields unstable; {how}: the gate "
                f"failed {used.false_fail.text} of its A/A pairs so ({other.false_fail.text} the other way)")


def profile_path(run_dir: Path) -> Path:
    return Path(run_dir) / PROFILE


def save_profile(run_dir: Path, profile: NoiseProfile) -> Path:
    path = profile_path(run_dir)
    store_files.replace(path, (json.dumps(profile.model_dump(mode="json"), indent=2) + "\n").encode())
    profile._path = path
    return path


def load_profile(run_dir: Path, key: str | None = None) -> NoiseProfile | None:
    """The profile stored with a run, None where there is none; one that does not read, or was measured on
    another run key, is refused (exit 2) rather than ignored: the gate would silently change."""
    path = profile_path(run_dir)
    if (raw := store_files.read_bytes(path)) is None:
        return None
    try:
        profile = NoiseProfile.model_validate_json(raw)
    except (ValidationError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"the noise profile cannot be read ({first}); run `evalrun calibrate` again or move it "
                          "aside", file=path) from None
    if key is not None and profile.key != key:
        raise ConfigError(f"the noise profile was measured on run key {profile.key[:12]}, this run is {key[:12]}",
                          file=path, path="key")
    profile._path = path
    return profile
