"""How long generating a prepared run's items should take (`evalrun check`), measured from stored runs, never
assumed (docs/commands.md, 'Checking before a run')."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from evalrun.contract.manifest import RunManifest
from evalrun.contract.types import Generation, Item
from evalrun.evals.files import ConfigError
from evalrun.evals.speed._speed import timing_figures
from evalrun.evals.store import RunStore

if TYPE_CHECKING:
    from evalrun.evals.results import PreparedRun

UNKNOWN = "unknown (no stored run to measure from)"


@dataclass
class SpeedModel:
    """A stored run's measured speed, in the units an estimate scales by."""

    run: str  # the run directory's name
    items: int  # successful, timed generations measured
    seconds_per_item: float
    prefill_tokens_per_second: float | None
    decode_tokens_per_second: float | None
    # mean new tokens over the run's max_new_tokens: how much of the allowed answer length is used
    answer_fill: float | None
    load_seconds: float | None = None

    def item_seconds(self, prompt_tokens: int, max_new_tokens: int, exact: bool) -> float:
        """One item's expected generation seconds; `exact`: it generates max_new_tokens (ignore_eos)."""
        if self.prefill_tokens_per_second is None or self.decode_tokens_per_second is None:
            return self.seconds_per_item
        fill = 1.0 if exact or self.answer_fill is None else min(self.answer_fill, 1.0)
        new_tokens = max_new_tokens * fill
        return prompt_tokens / self.prefill_tokens_per_second + max(new_tokens - 1, 0) / self.decode_tokens_per_second

    def basis(self) -> str:
        if self.prefill_tokens_per_second is None or self.decode_tokens_per_second is None:
            return f"{self.seconds_per_item:.3g} s/item measured by {self.run} ({self.items} items)"
        fill = f", answers {100 * self.answer_fill:.0f}% of max_new_tokens" if self.answer_fill is not None else ""
        return (f"prefill {self.prefill_tokens_per_second:,.0f} tok/s, decode {self.decode_tokens_per_second:,.1f} "
                f"tok/s{fill}, measured by {self.run} ({self.items} items)")


def measure(run: str, generations: Iterable[Generation], max_new_tokens: int | None,
            load_seconds: float | None = None) -> SpeedModel | None:
    ok = [g for g in generations if g.error is None and g.seconds > 0]
    if not ok:
        return None
    figures = timing_figures(ok)
    per_item = figures["generation_seconds"] / len(ok)
    timed = [g for g in ok if g.prefill_seconds is not None and g.prefill_seconds > 0]
    prefill_wall = sum((g.prefill_seconds or 0.0) / max(g.batch_size, 1) for g in timed)
    prompt_tokens = sum(g.prompt_tokens for g in timed)
    prefill = prompt_tokens / prefill_wall if prefill_wall > 0 and prompt_tokens > 0 else None
    mean_new = figures["mean_new_tokens"]
    fill = mean_new / max_new_tokens if max_new_tokens and mean_new is not None else None
    return SpeedModel(run, len(ok), per_item, prefill, figures["decode_throughput_tokens_per_second"], fill,
                      load_seconds)


@dataclass
class Estimate:
    """Expected generation seconds for the items still to generate and for all of them."""

    missing_seconds: float | None
    all_seconds: float | None
    basis: str
    load_seconds: float | None = None

    @property
    def known(self) -> bool:
        return self.all_seconds is not None


def estimate(items: list[Item], prompt_tokens: dict[str, int], max_new_tokens: int, missing: set[str],
             model: SpeedModel | None) -> Estimate:
    """Scale a speed model to these items (`prompt_tokens`: each item's tokens as the model reads them)."""
    if model is None:
        return Estimate(None, None, UNKNOWN)

    def seconds(it: Item) -> float:
        override = it.generation
        limit = override.max_new_tokens if override else max_new_tokens
        return model.item_seconds(prompt_tokens[it.id], limit, bool(override and override.ignore_eos))

    each = {it.id: seconds(it) for it in items}
    return Estimate(sum(each[i] for i in missing if i in each), sum(each.values()), model.basis(),
                    model.load_seconds)


def stored_model(run_dir: Path, manifest: RunManifest | None = None) -> SpeedModel | None:
    """The speed model of one stored run directory (None: unreadable, or nothing timed)."""
    store = RunStore(run_dir)
    try:
        manifest = manifest or RunManifest.model_validate(store.read_manifest())
    except (ConfigError, ValueError):
        return None
    max_new = (manifest.config.generation or {}).get("max_new_tokens")
    return measure(run_dir.name, store.read_samples().values(), max_new if isinstance(max_new, int) and max_new > 0
                   else None, manifest.load_seconds)


def _candidates(prepared: "PreparedRun", out: Path) -> list[tuple[tuple[bool, str], Path, RunManifest]]:
    """Other stored runs of this model identity on this device, with their sort key."""
    found: list[tuple[tuple[bool, str], Path, RunManifest]] = []
    if not out.is_dir():
        return found
    for run_dir in out.iterdir():
        if run_dir == prepared.dir or not (run_dir / "manifest.json").is_file():
            continue
        try:
            manifest = RunManifest.model_validate(RunStore(run_dir).read_manifest())
        except (ConfigError, ValueError):
            continue  # an unreadable manifest measures nothing; `report` and `run` say why
        model = manifest.model.identity if manifest.model else None
        if model != prepared.source.identity or manifest.device != prepared.device:
            continue
        same_accel = manifest.config.acceleration == prepared.config.accelerations().model_dump(mode="json")
        found.append(((same_accel, manifest.updated or manifest.created or ""), run_dir, manifest))
    return found


def reference_model(prepared: "PreparedRun", out: str | Path) -> SpeedModel | None:
    """This key's stored run when timed, else the latest of this model and device (same acceleration first)."""
    own = stored_model(prepared.dir) if (prepared.dir / "manifest.json").is_file() else None
    if own is not None:
        return own
    for _, run_dir, manifest in sorted(_candidates(prepared, Path(out)), key=lambda c: c[0], reverse=True):
        model = stored_model(run_dir, manifest)
        if model is not None:
            return model
    return None
