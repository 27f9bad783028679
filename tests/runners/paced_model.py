"""A model whose forward calls take a known time, for checking the hf runner's clock.

Hooks pad every forward call to exactly `prefill` seconds (a call that feeds more than one
new position per sequence: the prompt) or `decode` seconds (one new position: a decoding
step): a pre-hook notes when the call began, a post-hook sleeps out the rest (the last
fraction of a millisecond is waited out exactly). The model's own compute happens inside the
padded time, so only what `generate` does between calls is left to measure; `calibrate`
measures that once with no padding."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

SPIN = 0.0003  # seconds waited out exactly at the end of a padded call, past time.sleep's overshoot


@dataclass
class ForwardPacer:
    """Forward pre/post hooks; zero pacing only records each call's own time."""

    prefill: float = 0.0
    decode: float = 0.0
    calls: list[tuple[str, float]] = field(default_factory=list)  # (kind, own seconds before padding)
    _start: float = 0.0
    _kind: str = ""
    _handles: list[Any] = field(default_factory=list)

    def attach(self, model: Any) -> None:
        self._handles = [model.register_forward_pre_hook(self._pre, with_kwargs=True),
                         model.register_forward_hook(self._post)]

    def detach(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []

    def _pre(self, _module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        ids = kwargs.get("input_ids")
        if ids is None:
            ids = args[0] if args else kwargs.get("inputs_embeds")
        self._kind = "prefill" if ids is not None and ids.shape[1] > 1 else "decode"
        self._start = time.perf_counter()

    def _post(self, _module: Any, _args: Any, _output: Any) -> None:
        own = time.perf_counter() - self._start
        self.calls.append((self._kind, own))
        target = self._start + (self.prefill if self._kind == "prefill" else self.decode)
        rest = target - time.perf_counter()
        if rest > SPIN:
            time.sleep(rest - SPIN)
        while time.perf_counter() < target:
            pass

    def own(self, kind: str) -> list[float]:
        return [s for k, s in self.calls if k == kind]


@dataclass(frozen=True)
class Overhead:
    """What `generate` spends outside forward calls, per request: before and around the prompt's
    call up to the first token, and around each decoding step."""

    first: float
    step: float


def calibrate(run: Callable[[ForwardPacer], list[Any]]) -> Overhead:
    """Run once with unpadded hooks: TTFT less the prompt's forward, each gap less its step's forward."""
    pacer = ForwardPacer()
    gens = run(pacer)
    prefill = statistics.median(pacer.own("prefill"))
    decode = statistics.median(pacer.own("decode"))
    first = statistics.median(g.prefill_seconds for g in gens) - prefill
    step = statistics.median(gap for g in gens for gap in g.itl_seconds) - decode
    return Overhead(max(first, 0.0), max(step, 0.0))
