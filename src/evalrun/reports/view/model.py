"""The view model: every number any report shows, computed once, so the outputs cannot disagree. The
verdict and the flips are evals' own; the view adds only what a reader needs beside them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalrun.contract.types import OUTCOMES as CONTRACT_OUTCOMES
from evalrun.evals.compare import Comparison, FieldDelta, Flip, diffs
from evalrun.evals.drift import Drift
from evalrun.evals.speed import SpeedRow, SpeedTable
from evalrun.evals.gate import Verdict

# the contract's outcomes, and the browser's own state of an item a run did not answer
OUTCOMES = [*CONTRACT_OUTCOMES, "unanswered"]
NOSCRIPT_FLIPS = 500  # harmful flips per candidate listed in the page for readers without JavaScript
LONG_DOCUMENT_CHARS = 1_500  # the page shows longer documents collapsed


@dataclass
class RunInfo:
    name: str
    role: str  # baseline | candidate | repeat (A/A)
    dir: str
    model: str = ""
    device: str = ""
    dtype: str = ""
    method: str = "none"  # the accelerations with their main settings
    emulated: list[str] = field(default_factory=list)
    effects: list[str] = field(default_factory=list)  # what each acceleration measured, as short facts
    items: int = 0


@dataclass
class PackRow:
    """One pack of one comparison: paired items, both accuracies, the delta with its interval, flips."""

    pack: str
    n: int
    baseline_accuracy: float
    candidate_accuracy: float
    delta_points: float
    ci_low_points: float | None
    ci_high_points: float | None
    confidence: float | None
    p_value: float | None
    mde_points: float | None
    harmful_flips: int  # fields
    harmful_items: int
    helpful_items: int
    errors: int
    identical_outputs: int
    agreement: float
    # generated-token index where each non-identical output first differs from the baseline's
    first_divergence: tuple[int, ...] = ()
    aa_harmful: int | None = None
    status: str | None = None  # the verdict's pack_status; None for the ungated noise floor
    speed_only: bool = False  # the pack asks for no fields: nothing scored
    detail: dict[str, Any] = field(default_factory=dict)  # the JSON's further figures (F1, transitions, ...)
    # candidate accuracy / baseline accuracy (1.0: all recovered) and its paired bootstrap interval;
    # None when the baseline scored nothing
    recovery: float | None = None
    recovery_low: float | None = None
    recovery_high: float | None = None


# one field of one pack on the paired items, as the comparison stage computed it
FieldRow = FieldDelta


@dataclass
class NoiseFloor:
    """The A/A repeat in one place: what every renderer says about the noise."""

    run: str
    harmful_items: int
    identical_outputs: int
    items: int

    @property
    def sentence(self) -> str:
        return (f"Noise floor: {self.run} (a repeat of the baseline) has {self.harmful_items} harmful flip(s) and "
                f"{self.identical_outputs}/{self.items} identical outputs.")


@dataclass
class HeatCell:
    n: int
    value: float | None  # accuracy (0-1) or difference in points
    label: str  # what the cell shows
    tooltip: str
    fill: str
    ink: str  # text colour readable on `fill`
    marked: bool = False  # KL maps: at or under the A/A floor (outlined)


@dataclass
class Heatmap:
    title: str
    kind: str  # baseline | candidate | difference
    rows: list[str]  # depth labels, top to bottom
    cols: list[str]  # context-length labels, left to right
    cells: list[list[HeatCell | None]]  # [row][col]
    legend: list[tuple[str, str]]  # (label, fill)


@dataclass
class HeatmapSet:
    pack: str
    unit: str
    baseline: Heatmap
    candidate: Heatmap
    difference: Heatmap
    kl: Heatmap | None = None  # the candidate's mean KL per cell (reports/view/heatmaps.py), where drift was measured


@dataclass
class KLMap:
    """A candidate's mean KL by context-length bucket, for a pack without accuracy heatmaps."""

    pack: str
    unit: str
    heatmap: Heatmap


@dataclass
class ListedFlip:
    """A harmful flip as the page lists it without JavaScript: the flip, its values as shown
    (normalised gold, clipped answers) and the character diff of gold -> candidate value."""

    flip: Flip
    gold: str | None
    baseline_value: str | None
    candidate_value: str | None
    gold_segments: list[diffs.Segment] | None = None
    status: str = "counted"  # how the gate took it: counted, confirmed, or noise (reports.text.units.flip_status)


@dataclass
class CandidateSection:
    name: str
    comparison: Comparison
    verdict: Verdict | None  # None: the ungated noise floor
    info: RunInfo
    packs: list[PackRow]
    fields: list[FieldRow]
    heatmaps: list[HeatmapSet] = field(default_factory=list)
    flips: list[ListedFlip] = field(default_factory=list)  # the first NOSCRIPT_FLIPS harmful flips
    drift: Drift | None = None  # teacher-forced drift against the baseline, where measured
    kl_maps: list[KLMap] = field(default_factory=list)  # mean KL by length, packs without accuracy heatmaps

    @property
    def status(self) -> str:
        return self.verdict.status if self.verdict else "pass"


@dataclass
class BrowserData:
    baseline: str
    candidates: list[str]
    packs: list[str]
    fields: list[str]
    kinds: list[str]  # each field's type, aligned with `fields`
    outcomes: list[str]
    subcodes: list[str | None]
    items: list[list[Any]]
    rows: list[list[Any]]
    run_dirs: list[str]  # baseline first, then the candidates: where the full prompts live
    flips: int  # harmful + helpful cells over all candidates
    # the per-token KL strip's colours (reports/view/heatmaps.py KL_STOPS, KL_LOW, KL_HIGH): one scale, two views
    kl_scale: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReportView:
    title: str
    created: str
    status: str
    exit_code: int
    baseline: RunInfo
    sections: list[CandidateSection]
    speed_table: SpeedTable
    noise_floor: NoiseFloor | None = None
    noise_section: CandidateSection | None = None  # the A/A comparison's own tables
    # the baseline's replicates: how many, fields stable and unstable, the A/A harmful-flip rate
    stability: dict[str, Any] | None = None
    browser: BrowserData | None = None
    texts_blob: str = ""  # base64(gzip(JSON list of texts))
    texts_cut: int = 0  # documents shortened to fit the text budget
    flips_listed_max: int = NOSCRIPT_FLIPS
    pictures: list[Any] = field(default_factory=list)  # inline SVG (markupsafe.Markup), drawn by evalrun
    long_document_chars: int = LONG_DOCUMENT_CHARS
    drift_note: str | None = None  # why no run has drift ("no logprobs stored with the baseline")
    control: RunInfo | None = None  # compare --control: the run each harmful flip is attributed against

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def verdicts(self) -> list[Verdict]:
        return [s.verdict for s in self.sections if s.verdict is not None]

    @property
    def candidates(self) -> list[RunInfo]:
        return [s.info for s in self.sections]

    @property
    def speed(self) -> list[SpeedRow]:
        return self.speed_table.rows

    @property
    def capacity_note(self) -> str | None:
        return self.speed_table.capacity_note
