"""A local Inspect task on the lm-eval task's arithmetic questions (tests/data/lmeval/task/arith.jsonl)."""

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, json_dataset
from inspect_ai.scorer import match
from inspect_ai.solver import generate, prompt_template

DATA = Path(__file__).resolve().parents[2] / "lmeval" / "task" / "arith.jsonl"


@task
def arith() -> Task:
    return Task(
        dataset=json_dataset(str(DATA), FieldSpec(input="question", target="answer")),
        solver=[prompt_template("{prompt} Answer with the number only."), generate()],
        scorer=match(numeric=True),
    )
