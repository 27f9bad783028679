"""A prepared run whose runner answers from the gold, with no model: for tests of what `execute`
does with the store around generation (links, a full disk), where the model is beside the point."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from evalrun.contract import Generation, Item
from evalrun.evals.config import parse_config
from evalrun.evals.results import PreparedRun
from evalrun.runners.base import Runner, RunRequest
from evalrun.runners.models import ModelSource
from tests.conftest import needle_items, tiny_config


class GoldRunner(Runner):
    """Answers every item with its gold, one at a time; `after_each(n)` is called after the n-th emit."""

    def __init__(self, after_each: Callable[[int], None] | None = None) -> None:
        super().__init__()
        self.after_each = after_each
        self.emitted = 0

    def render(self, item: Item) -> str:
        return item.prompt

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def max_context(self) -> int | None:
        return None

    def run(self, request: RunRequest, emit: Callable[[Generation], None]) -> None:
        for item in request.items:
            gold = item.fields[0].gold or ""
            emit(Generation(item_id=item.id, pack=item.pack, prompt_hash=item.prompt_hash, output=f"It is {gold}.",
                            new_tokens=3, seconds=0.01, batch_size=1, prompt_tokens=100))
            self.emitted += 1
            if self.after_each is not None:
                self.after_each(self.emitted)


def gold_run(root: Path, runner: GoldRunner | None = None, n: int = 6) -> PreparedRun:
    """`n` needle items in `root/runs/gold-000000000000`, answered by a GoldRunner."""
    config = parse_config(tiny_config(Path("/no/model"), name="gold"), file=root / "gold.yaml")
    source = ModelSource("gold", "dir", "/no/model", {"model": "gold"})
    return PreparedRun(config, source, "cpu", "float32", needle_items()[:n], "0" * 64,
                       root / "runs" / "gold-000000000000", runner or GoldRunner())
