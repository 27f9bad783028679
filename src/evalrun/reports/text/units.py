"""How numbers read in every report (terminal, Markdown, JUnit, HTML): one format, no arithmetic."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalrun.evals.speed import EMULATED_NOTE, SPEED_ONLY

if TYPE_CHECKING:
    from evalrun.evals.speed import SpeedRow, SpeedTable
    from evalrun.evals.compare import Flip
    from evalrun.evals.gate import RuleResult, Verdict

DASH = "–"


def clip(text: str, width: int) -> str:
    """At most `width` characters, an ellipsis marking the cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def flat_clip(text: object, width: int = 60, none: str = "∅") -> str:
    """Whitespace collapsed to single spaces (a model's answer on one table line), then clipped."""
    return none if text is None else clip(" ".join(str(text).split()), width)


def size(n: float | None, signed: bool = False) -> str:
    """Bytes in binary units: 46.1 KiB, 1.24 GiB (signed: +/-, for memory saved)."""
    if n is None:
        return DASH
    sign = ("+" if n > 0 else "−" if n < 0 else "") if signed else ("−" if n < 0 else "")
    v = abs(float(n))
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if v < 1024 or unit == "TiB":
            return f"{sign}{v:.0f} {unit}" if unit == "B" or v >= 100 else f"{sign}{v:.3g} {unit}"
        v /= 1024
    return DASH  # pragma: no cover


def seconds(x: float | None) -> str:
    """Latency with the unit that keeps three significant digits readable: 183 ms, 2.41 s."""
    if x is None:
        return DASH
    return f"{1000 * x:.3g} ms" if x < 1.0 else f"{x:.3g} s"


def rate(x: float | None, digits: int = 1) -> str:
    return DASH if x is None else f"{x:,.{digits}f}"


def _with_interval(x: float | None, low: float | None, high: float | None, spec: str, unit: str = "") -> str:
    if x is None:
        return DASH
    interval = f" [{low:{spec}}, {high:{spec}}]" if low is not None and high is not None else ""
    return f"{x:{spec}}{unit}{interval}"


def ratio(x: float | None, low: float | None = None, high: float | None = None) -> str:
    """A speedup with its interval: 1.52× [1.31, 1.70]."""
    return _with_interval(x, low, high, ".2f", "×")


def delta_points(x: float | None, low: float | None = None, high: float | None = None) -> str:
    """An accuracy delta in points with its interval: −6.7 [−20.0, +0.0]."""
    return minus(_with_interval(x, low, high, "+.1f"))


def minus(text: str) -> str:
    return text.replace("-", "−")


def num(x: float | None, digits: int = 1, sign: bool = False) -> str:
    if x is None:
        return DASH
    return minus(f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}")


def pct(x: float | None, digits: int = 1) -> str:
    """0.917 -> 91.7%."""
    return DASH if x is None else num(100 * x, digits) + "%"


def ci(low: float | None, high: float | None) -> str:
    """An interval in points: [−20.0, +3.3]; the one spelling of every CI in every report."""
    return DASH if low is None or high is None else f"[{num(low, 1, True)}, {num(high, 1, True)}]"


def divergence_cell(first: list[int] | tuple[int, ...], identical: int, n: int) -> str:
    """Where differing outputs first part from the baseline's, in generated tokens (0 = the first
    token): "-" when all are identical, else the earliest and the median, e.g. "3 (med 7)"."""
    if not first:
        return "-" if identical == n else "n/a"
    ordered = sorted(first)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return f"{ordered[0]} (med {median:g})"


def p_value(x: float | None) -> str:
    return DASH if x is None else f"{x:.3g}"


def g(x: float | None) -> str:
    return DASH if x is None else minus(f"{x:g}")


def rule_text(r: "RuleResult") -> str:
    """One rule as a sentence: what was measured against what, and where the rule came from; a rule
    that could not fail says so first."""
    origin = ", default rule" if r.origin == "default" else ""
    measured = "not evaluated" if not r.evaluated else f"measured {r.measured:g}"
    if r.evaluated and r.p_value is not None:
        measured += f" (p = {r.p_value:.3g} against the A/A rate)"
    head = f"{r.untestable_reason}, " if r.status == "untestable" else ""
    return f"{r.rule}: {head}{measured}, threshold {r.comparator} {r.threshold:g} ({r.detail}{origin})"


def flip_status(f: "Flip", verdict: "Verdict | None") -> str:
    """How the gate took one harmful flip (counted and confirmed, or set aside as noise) and, with a control
    run, whether it lost that field too (one wording everywhere)."""
    control = "" if f.in_control is None else "also in control" if f.in_control else "flag only"
    return "; ".join(t for t in (_gate_status(f, verdict), control) if t)


def _gate_status(f: "Flip", verdict: "Verdict | None") -> str:
    if verdict is not None and any(n.key == f.key for n in verdict.noise_flips):
        return "noise: unstable at baseline, not gated"
    if f.confirmations is None:
        return ""
    reproduced, asked = f.confirmations
    if f.confirmed:
        return f"confirmed: reproduced in {reproduced} of {asked} re-asks"
    return f"noise: reproduced in {reproduced} of {asked} re-asks, not counted"


def speedup_cell(row: "SpeedRow", metric: str, short: bool = False) -> str:
    """A speedup cell of a speed row (`metric`: "ttft_p50", "tpot_p50", ...): 1.00× for the
    baseline, the ratio with its interval, or why there is no claim (`short`: in two words)."""
    if row.role == "baseline":
        timed = (row.metrics.get(metric.split("_")[0]) or {}).get("n")
        return "1.00×" if timed else DASH
    if row.speed_note:
        if not short:
            return row.speed_note
        return EMULATED_NOTE if EMULATED_NOTE in row.speed_note else "not comparable"
    sp = row.speedup(metric)
    if sp is None:
        return DASH
    # how it was timed, beside the figure (under it in the terminal): "interleaved", or "sequential"
    # with ⚠ when the machine's load says the figure follows it (the note under the table says why)
    label = row.timing + (" ⚠" if row.timing_warning else "") if row.timing else ""
    return ratio(sp.value, sp.low, sp.high) + (("\n" if short else " ") + label if label else "")


def latency_cell(metrics: dict, metric: str, stats: tuple[str, ...] = ("p50", "p99")) -> str:
    """'12.3 ms / 20.1 ms': a latency's percentiles from a speed row's or group's figures."""
    figs = metrics.get(metric) or {}
    return " / ".join(seconds(figs.get(s)) for s in stats)


def server_cell(row: "SpeedRow", which: str = "both") -> str:
    """The engine's own timings (means): 'TTFT / TPOT', or one of them ("first", "per_token", "e2e"); a
    figure the engine gives only in another form is named ("prefill 41.2 ms", "ITL 8.1 ms"); a dash for
    a server that reports none, or a run in process."""
    t = row.server_timings
    if t is None or t.source is None:
        return DASH

    def shown(found: tuple[str, float] | None, usual: str) -> str:
        if found is None:
            return DASH
        name = "ITL" if found[0] == "itl" else found[0]
        return seconds(found[1]) if found[0] == usual else f"{name} {seconds(found[1])}"

    first, per = shown(t.first_token(), "ttft"), shown(t.per_token(), "tpot")
    if which == "first":
        return first
    if which == "per_token":
        return per
    return seconds(t.means.get("e2e")) if which == "e2e" else f"{first} / {per}"


def load_cell(row: "SpeedRow") -> str:
    """The load a run was timed at: its batch size (hf) or concurrency (a server)."""
    if row.concurrency:
        return f"{row.concurrency} concurrent"
    return f"batch {row.batch_size}" if row.batch_size else DASH


def definitions_note(table: "SpeedTable") -> str:
    """The one sentence saying which definition each speed column follows, in every output."""
    slo = f" Goodput: requests meeting every SLO ({table.slo}), share of all requests and per second." \
        if table.slo else " Goodput: give --slo (or a config's `slo:`)."
    return ("Definitions (vLLM bench serve): TTFT = time to the first token; TPOT = (E2EL - TTFT) / (output tokens "
            "- 1) per request (GuideLLM calls this ITL); ITL = every gap between streamed chunks or decoding steps, "
            "pooled; E2EL = time to the last token; req/s and out tok/s over the run's wall clock. Percentiles: "
            f"{', '.join(f'p{q:g}' for q in table.percentiles)} (linear interpolation)." + slo)


def goodput_cell(goodput: dict | None) -> str:
    """'75.0% (3.10 req/s)': the share of requests meeting every SLO and their rate."""
    return DASH if not goodput else f"{pct(goodput.get('share'))} ({rate(goodput.get('rate'), 2)} req/s)"


def accuracy_cell(row: "SpeedRow") -> str:
    """The speed table's accuracy cell: the pooled delta with its interval, "speed only", or a dash."""
    if row.speed_only:
        return SPEED_ONLY
    if row.role == "baseline":
        return DASH
    return delta_points(row.accuracy_delta_points, row.accuracy_ci_low_points, row.accuracy_ci_high_points)


def memory_saved_cell(row: "SpeedRow") -> str:
    return DASH if row.role == "baseline" or row.speed_note else size(row.memory_saved_bytes, signed=True)
