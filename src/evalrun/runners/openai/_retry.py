"""When and how long to wait before sending a request again.

Servers under load answer 429 or 503 and say when to come back
(`Retry-After`); a dropped connection or a timeout is worth another try too.
Everything else (400, 401, 404, ...) will fail the same way again, so it is
not retried. Waits grow exponentially with jitter so that many clients
backing off together do not return in lockstep.
"""

from __future__ import annotations

import random
import time
from email.utils import parsedate_to_datetime

# the longest Retry-After honoured; a server asking for more is treated as asking for this
MAX_RETRY_AFTER = 300.0


def retryable_status(code: int) -> bool:
    """429 (rate limited), 408 (request timeout) and every 5xx are transient."""
    return code in (408, 429) or code >= 500


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds a `Retry-After` header asks for: a number of seconds or an HTTP date; None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def backoff_seconds(attempt: int, base: float, cap: float, rng: random.Random | None = None) -> float:
    """Wait before retry number `attempt` (0 = first retry): base * 2**attempt capped, the upper half jittered."""
    span = min(cap, base * (2 ** min(attempt, 32)))
    return span / 2 + (rng or random).uniform(0, span / 2)


def retry_wait(attempt: int, base: float, cap: float, retry_after: float | None,
               rng: random.Random | None = None) -> float:
    """The backoff, but never shorter than what the server asked for."""
    wait = backoff_seconds(attempt, base, cap, rng)
    return max(wait, retry_after) if retry_after is not None else wait
