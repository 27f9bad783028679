"""An exact, deterministic backend for the OpenAI test server (tests/runners/openai_server.py):
it answers every item it knows with its gold values, so a baseline is right on every field
and whatever a candidate loses is the candidate's (`wrong` decides which answers are altered).
No model is loaded; the CLI under test talks to it over real HTTP as it would to vLLM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import yaml

from evalrun.contract.types import Item
from evalrun.evals import api

SERVED = "smollm2-135m"  # the served name; the local tokenizer of the same name sizes the prompts


def items_of(packs: list[dict[str, Any]]) -> list[Item]:
    """The items a config with these `tasks` asks (the openai runner builds them the same way)."""
    out: list[Item] = []
    for task in packs:
        params = {k: v for k, v in task.items() if k != "pack"}
        out.extend(api.export_pack(task["pack"], params, model=SERVED))
    return out


def exact_answer(item: Item) -> str:
    golds = {f.name: f.gold for f in item.fields}
    if item.answer_format == "json":
        return json.dumps(golds)
    return "\n".join(f"{g}" if len(golds) == 1 else f"{n}: {g}" for n, g in golds.items() if g is not None) or "none"


def wrong_answer(item: Item) -> str:
    """Every digit of every gold changed: a lost amount, number or date on every field."""
    shift = str.maketrans("0123456789", "1234567890")
    golds = {f.name: (f.gold.translate(shift) if f.gold else f.gold) for f in item.fields}
    if item.answer_format == "json":
        return json.dumps(golds)
    return "\n".join(f"{g}" if len(golds) == 1 else f"{n}: {g}" for n, g in golds.items() if g is not None) or "none"


class ExactBackend:
    """`prompt_of`/`stream` as the test server calls them; answers by the prompt's hash."""

    def __init__(self, items: list[Item], wrong: Callable[[Item], bool] = lambda _it: False):
        self.by_prompt = {json.dumps([it.system, it.prompt]): it for it in items}
        self.wrong = wrong

    def prompt_of(self, body: dict[str, Any], chat: bool) -> str:
        assert chat, "the exact backend serves the chat endpoint"
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), None)
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return json.dumps([system, user])

    def stream(self, text: str, body: dict[str, Any], usage: dict[str, int],
               waiting: Callable[[], None] | None = None) -> Iterator[str]:
        item = self.by_prompt.get(text)
        answer = "I do not know." if item is None else (wrong_answer if self.wrong(item) else exact_answer)(item)
        yield answer
        usage.update(prompt_tokens=len(text) // 4, completion_tokens=len(answer) // 4 + 1,
                     total_tokens=len(text) // 4 + len(answer) // 4 + 1, finish=1)


def served_config(path: Path, name: str, base_url: str, tasks: list[dict[str, Any]],
                  gate: dict[str, Any] | None = None) -> Path:
    """A config of the `openai` runner against the test server."""
    data: dict[str, Any] = {
        "name": name, "runner": "openai", "model": SERVED,
        "openai": {"base_url": base_url, "concurrency": 2, "timeout": 30, "max_retries": 1},
        "generation": {"max_new_tokens": 16, "temperature": 0},
        "tasks": tasks,
    }
    if gate is not None:
        data["gate"] = gate
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path
