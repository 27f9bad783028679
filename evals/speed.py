"""Speed as the runs record it: a batch's wall time is shared by its items."""

from __future__ import annotations

from evals.execute import RunResult


def run_timing(run: RunResult) -> tuple[int, float | None, float | None]:
    """(items timed, mean seconds per item, new tokens per second) over the run's successful generations."""
    timed = [g for g in run.generations.values() if g.error is None and g.seconds > 0]
    per_item = [g.seconds / max(g.batch_size, 1) for g in timed]
    if not per_item:
        return 0, None, None
    total = sum(per_item)
    tokens = sum(g.new_tokens for g in timed)
    return len(per_item), total / len(per_item), (tokens / total if total > 0 else None)
