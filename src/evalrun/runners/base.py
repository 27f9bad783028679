"""What the pipeline needs of a backend: the `Runner` interface (lm-eval's `LM` is the model), and the one `RunRequest`
each call of `run` receives.

evals/run/_execute.py uses a runner only through these methods, so a backend that implements them plugs in without
touching the pipeline. A runner keeps only what it was built with and what it measured; a caller that asks otherwise for
one call (a re-ask, a warm-up, a forced read) passes another request."""

from __future__ import annotations

import abc
import contextlib
import gc
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from evalrun.contract.generation import GenerationSettings
from evalrun.contract.types import Generation, Item
from evalrun.runners.accel.base import Acceleration
from evalrun.runners.logprobs import ForcedDists, TokenDists


def messages(item: Item) -> list[dict[str, str]]:
    """An item as chat messages: the system prompt (when it has one), then the question."""
    system = [{"role": "system", "content": item.system}] if item.system else []
    return [*system, {"role": "user", "content": item.prompt}]


def render_chat(tokenizer: Any, item: Item) -> str:
    """The exact text the model reads for `item`: the tokenizer's chat template when it has one (the hf runner
    feeds it; the openai runner sends it to `completions`, and a `chat` server renders the same template)."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages(item), tokenize=False, add_generation_prompt=True)
    return f"{item.system}\n\n{item.prompt}" if item.system else item.prompt


@dataclass(frozen=True)
class RunRequest:
    """One hand-off to `Runner.run`: the items to generate and how (defined once; every backend reads it)."""

    items: list[Item]
    generation: GenerationSettings = field(default_factory=GenerationSettings)
    # every item of the run (not only those still missing), for methods that calibrate on them; None: `items`
    run_items: list[Item] | None = None
    # at most this many items per batch (a re-ask at batch 1); None: the runner's own batch size
    batch_size: int | None = None
    # batch composition: None, the runner's own plan; a seed, items shuffled into other batches
    # (a replicate or a re-ask sees other neighbours and padding, as a GPU server's batches would)
    batch_seed: int | None = None
    top_k: int = 0  # each generated token's top-k distribution to `on_distribution` (runners/logprobs.py)
    on_distribution: Callable[[str, TokenDists], None] | None = None
    # teacher forcing: read these baseline answers instead of generating (emits placeholders), records to on_forced
    forced: dict[str, TokenDists] | None = None
    on_forced: Callable[[str, ForcedDists], None] | None = None
    # while generating: an answer equal to the baseline's gives its forced record to `on_forced`
    watched: dict[str, TokenDists] | None = None

    @property
    def every(self) -> list[Item]:
        """The run's items (calibration, plans that see the whole run)."""
        return self.run_items or self.items


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """The heap frozen while a run is timed, so the garbage collector's full passes stay short.

    With transformers, a tokenizer and torch loaded, a full collection walks hundreds of thousands of objects
    and stopped every thread for 60-290 ms (measured in the openai runner), inside some requests' TTFT or ITL;
    vLLM's `bench serve` freezes too. Unfrozen only when this call froze them, so a caller's own freeze stays.
    No collection first: it would cost as much as the pause it avoids."""
    ours = gc.get_freeze_count() == 0
    gc.freeze()
    try:
        yield
    finally:
        if ours:
            gc.unfreeze()


class Runner(abc.ABC):
    """One model (local or served) that turns Items into Generations."""

    reads_forced = False  # reads a request's `forced` answers (teacher forcing); Ray actors cannot

    def __init__(self, accelerations: list[Acceleration] | None = None) -> None:
        # applied in this process (a served engine applies its own: none here)
        self.accelerations: list[Acceleration] = list(accelerations or [])
        self.load_seconds = 0.0  # seconds spent loading the model, 0 when nothing was loaded here

    @abc.abstractmethod
    def render(self, item: Item) -> str:
        """The exact text the model reads for `item` (its chat template applied)."""

    @abc.abstractmethod
    def count_tokens(self, text: str) -> int:
        """Tokens of `text` in the model's tokenizer (packs size their prompts with it)."""

    def prompt_tokens(self, item: Item) -> int:
        """Tokens of the item's rendered prompt: the length batches are planned by (runners/batch_plan.py)."""
        return self.count_tokens(self.render(item))

    @abc.abstractmethod
    def max_context(self) -> int | None:
        """The most tokens the model attends to (prompt and answer); None when unknown."""

    def served_context(self) -> tuple[int, str] | None:
        """A server's context in tokens and where it was learnt; None here, where `max_context` says it."""
        return None

    def preflight(self) -> str | None:
        """For `check` (nothing generated): ask a server what it serves, so its context is known before a
        run and a URL that cannot be the server is an error now; a note on what could not be asked.
        None here: an in-process model has nothing to ask."""
        return None

    @abc.abstractmethod
    def run(self, request: RunRequest, emit: Callable[[Generation], None]) -> None:
        """Generate every item of `request`, handing each Generation to `emit` as soon as it exists; an item
        that fails is an `error` Generation, and only a run that cannot go on raises."""

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """Whatever `run` needs up (a launched server) kept up for the whole block, so several `run`s share
        it (interleaved timing: both sides' servers up at once); nothing to do for a model in this process."""
        yield

    def manifest_extras(self) -> dict[str, Any]:
        """What the run did beyond its generations (batch sizes as run, a server's answers), for the manifest."""
        return {}

    def effects(self) -> dict[str, dict[str, Any]]:
        """What each acceleration measured, by its config key."""
        return {a.name: a.effects() for a in self.accelerations}

    def clock(self) -> str:
        """How this runner takes its timestamps, in words (the manifest's `speed.clock`)."""
        return "not timed"

    def kv_source(self) -> tuple[Any, int] | None:
        """(model config, element size in bytes) of the model loaded here, for the KV-cache
        figures; None when no model is loaded in this process."""
        return None
