"""The `openai:` and `engine:` blocks of a config, and where the API key comes from.

Apart from the runner so the config loader can validate them without the HTTP
machinery; the key itself never appears in a config, only the name of the
environment variable that holds it.
"""

from __future__ import annotations

import os
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator


class OpenAISettings(BaseModel):
    """The `openai:` block of a config."""

    model_config = ConfigDict(extra="forbid")

    base_url: str
    # the NAME of an environment variable holding the key; the key itself never appears in a config
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    endpoint: Literal["chat", "completions"] = "chat"
    stream: bool = True
    concurrency: int = Field(8, ge=1, le=1024)
    # requests per second arriving as a Poisson process (vLLM's --request-rate), still at most
    # `concurrency` in flight; None: every request as soon as a slot is free
    request_rate: float | None = Field(None, gt=0, le=1_000_000)
    arrival_seed: int = 0  # the arrival times' random draw, so a sweep point is repeatable
    # seconds to wait for a connection or for the server's next bytes (a stream that keeps sending is never cut)
    timeout: float = Field(300.0, gt=0)
    max_retries: int = Field(5, ge=0, le=100)
    # first retry waits about this long, doubling each time up to max_backoff
    backoff: float = Field(0.5, gt=0, le=60)
    max_backoff: float = Field(30.0, gt=0, le=600)
    # local model spec whose tokenizer sizes prompts and renders the chat template for `completions`; default `model`
    tokenizer: str | None = None

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"must be an http(s) URL such as http://127.0.0.1:8000/v1 (got {value!r})")
        if parts.username or parts.password:
            raise ValueError("must not carry credentials; name the environment variable holding the key in api_key_env")
        if parts.query or parts.fragment:
            raise ValueError(f"must not have a query or fragment (got {value!r})")
        return value.rstrip("/")


class EngineInfo(BaseModel):
    """The serving engine and the flags it was started with, as the user declares them.

    The server cannot report its own flags, so this is how a baseline server
    and an fp8-KV server behind one model name get different cache keys."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    version: str | None = None
    args: list[str] = Field(default_factory=list)


def api_key_from_env(settings: OpenAISettings) -> str | None:
    """The key from the named variable; None when no variable is named. Raises KeyError when it is unset."""
    if not settings.api_key_env:
        return None
    value = os.environ.get(settings.api_key_env)
    if not value:
        raise KeyError(settings.api_key_env)
    return value
