"""The `openai:`, `engine:` and `server:` blocks of a config, and where the API key comes from.

Apart from the runner so the config loader validates them without the HTTP machinery. A config names the
key's environment variable, never the key; a value that could be a key pasted in the wrong place is refused
without being repeated. `server:`'s launch identity (command, flags, environment, engine version) enters the
run key, with each `env` value only as its hash (docs/served-engines.md, 'The engine and the run key').
"""

from __future__ import annotations

import hashlib
import os
import re
import string
import subprocess
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator, model_validator

from evalrun.contract.errors import UsageError
from evalrun.runners.openai._api_key import key_problem, remember, remember_secrets
from evalrun.runners.config_rules import RuleBroken

# what a command may name; {port} is the loopback port evalrun picks
PLACEHOLDERS = {"port": "the free 127.0.0.1 port evalrun picked", "host": "127.0.0.1",
                "model": "the config's `model`: the name the server must serve",
                "model_path": "the local file or directory the config's `model` resolves to (an alias's GGUF)"}


def hashed_env(env: dict[str, str]) -> dict[str, str]:
    """`env` as it may be written down: each name with the sha256 of its value, sorted by name."""
    return {k: "sha256:" + hashlib.sha256(v.encode("utf-8", "surrogatepass")).hexdigest()
            for k, v in sorted(env.items())}


def placeholders_in(text: str) -> list[str]:
    """The {names} a command word uses; ValueError on a malformed brace."""
    return [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]


class ServerSettings(BaseModel):
    """`server:`: the command that starts an OpenAI-compatible engine for this config's run."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    # GET this path (on the server's root, not under /v1) until it answers 200
    ready: str = "/v1/models"
    # the OpenAI API's root on the server
    api_path: str = "/v1"
    startup_timeout: float = Field(default=600.0, gt=0, le=24 * 3600)
    port: int | Literal["auto"] = "auto"
    # seconds between SIGTERM and SIGKILL to the server's process group
    grace: float = Field(default=10.0, ge=0, le=600)
    # the engine's version as a fact of the key: a string, or a command whose output it is (run before
    # anything starts, so a stored run is found without launching the server)
    version: str | None = None
    version_command: list[str] | None = Field(default=None, min_length=1)

    def model_post_init(self, context: Any) -> None:
        remember_secrets(self.env.values())  # reading the config is enough: whatever follows masks them

    @field_serializer("env")
    def _env_hashed(self, env: dict[str, str]) -> dict[str, str]:
        """A dump (the manifest's resolved config) names the variables, never their values."""
        return hashed_env(env)

    @field_validator("command", "version_command")
    @classmethod
    def _known_placeholders(cls, value: list[str] | None) -> list[str] | None:
        for word in value or []:
            try:
                names = placeholders_in(word)
            except ValueError as exc:
                raise ValueError(f"{word!r}: {exc} (a literal brace is written {{{{ or }}}})") from None
            unknown = [n for n in names if n not in PLACEHOLDERS]
            if unknown:
                raise ValueError(f"{word!r} names {{{unknown[0]}}}; known placeholders: "
                                 + ", ".join("{" + n + "}" for n in PLACEHOLDERS))
        return value

    @field_validator("ready", "api_path")
    @classmethod
    def _path(cls, value: str) -> str:
        if not value.startswith("/") or "://" in value:
            raise ValueError(f"must be a path on the server such as /health or /v1/models (got {value!r})")
        return value

    @field_validator("port")
    @classmethod
    def _port(cls, value: int | str) -> int | str:
        if isinstance(value, int) and not 1 <= value <= 65535:
            raise ValueError(f"must be 'auto' or a port from 1 to 65535 (got {value})")
        return value

    @model_validator(mode="after")
    def _port_in_command(self) -> "ServerSettings":
        if not any("port" in placeholders_in(w) for w in self.command):
            raise ValueError("the command must take the port evalrun gives it: put {port} where the engine reads "
                             "its port (e.g. --port {port})")
        if self.version is not None and self.version_command is not None:
            raise ValueError("give version or version_command, not both")
        return self

    def launch_identity(self, version: str | None) -> dict[str, Any]:
        """What the run key holds of the launch: the command as written (placeholders unfilled, so the
        port never enters it), the environment (hashed: a changed value is a new key, the key stores
        no value) and the engine's version."""
        return {"command": list(self.command), "env": hashed_env(self.env), "version": version}


def filled(words: list[str], values: dict[str, str]) -> list[str]:
    """A command with its placeholders filled."""
    return [w.format(**values) for w in words]


class VersionUnknown(UsageError, ValueError):
    """`version_command` could not be run or said nothing."""


def engine_version(settings: ServerSettings, values: dict[str, str], env: dict[str, str]) -> str | None:
    """`version`, or the first line `version_command` prints (VersionUnknown when it fails)."""
    if settings.version_command is None:
        return settings.version
    argv = filled(settings.version_command, values)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise VersionUnknown(f"{' '.join(argv)}: {exc}") from None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        said = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise VersionUnknown(f"{' '.join(argv)} exited {done.returncode}: {said}")
    return lines[0].strip()[:200]


# request fields evalrun itself fills in (runners/openai/runner.py `_body`)
SET_BY_EVALRUN = frozenset({"model", "messages", "prompt", "max_tokens", "temperature", "top_p", "seed", "stream",
                            "stream_options", "ignore_eos", "logprobs", "top_logprobs"})

_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def shown_url(value: str) -> str:
    """A URL as an error may quote it: scheme, host, port and path; userinfo, query and fragment hidden
    (they are where a pasted key would sit)."""
    parts = urlsplit(value)
    host = parts.hostname or ""
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ":?"
    return (f"{parts.scheme}://{'<hidden>@' if '@' in parts.netloc else ''}{host}{port}{parts.path}"
            f"{'?<hidden>' if parts.query else ''}{'#<hidden>' if parts.fragment else ''}")


class OpenAISettings(BaseModel):
    """The `openai:` block of a config."""

    model_config = ConfigDict(extra="forbid")

    # None with `server:`: evalrun launches the engine and points here itself
    base_url: str | None = None
    # the NAME of an environment variable holding the key; the key itself never appears in a config
    api_key_env: str | None = None
    endpoint: Literal["chat", "completions"] = "chat"
    stream: bool = True
    concurrency: int = Field(default=8, ge=1, le=1024)
    # requests per second arriving as a Poisson process (vLLM's --request-rate), still at most
    # `concurrency` in flight; None: every request as soon as a slot is free
    request_rate: float | None = Field(default=None, gt=0, le=1_000_000)
    arrival_seed: int = 0  # the arrival times' random draw, so a sweep point is repeatable
    # seconds to wait for a connection or for the server's next bytes (a stream that keeps sending is never cut)
    timeout: float = Field(default=300.0, gt=0)
    max_retries: int = Field(default=5, ge=0, le=100)
    # first retry waits about this long, doubling each time up to max_backoff
    backoff: float = Field(default=0.5, gt=0, le=60)
    max_backoff: float = Field(default=30.0, gt=0, le=600)
    # local model spec whose tokenizer sizes prompts and renders the chat template for `completions`; default `model`
    tokenizer: str | None = None
    # the served context in tokens, prompt and answer together (vLLM --max-model-len, llama.cpp -c), for a
    # server whose /models does not say it: an item that cannot fit is an error before it is sent
    max_model_len: int | None = Field(default=None, ge=1)
    # engine fields sent in every request body (llama.cpp's repeat_penalty, vLLM's top_k): servers apply
    # their own sampling defaults even at temperature 0, so what is sent here is part of the run key
    extra_body: dict[str, Any] = Field(default_factory=dict)

    @field_validator("extra_body")
    @classmethod
    def _not_ours(cls, value: dict[str, Any]) -> dict[str, Any]:
        taken = sorted(set(value) & SET_BY_EVALRUN)
        if taken:
            raise ValueError(f"{taken[0]!r} is set by evalrun (generation: sets max_new_tokens, temperature, top_p and "
                             f"seed; `logprobs:` the top-k asked for; the items set the prompt); extra_body may not override: {', '.join(sorted(SET_BY_EVALRUN))}")
        return value

    @field_validator("base_url", mode="before")
    @classmethod
    def _http_url(cls, value: object) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError(f"must be an http(s) URL such as http://127.0.0.1:8000/v1 (got a {type(value).__name__})")
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or "://" not in value:
            raise ValueError("must be an http(s) URL such as http://127.0.0.1:8000/v1 (the value is not shown: it "
                             "does not start with http:// or https://)")
        if "@" in value.split("?", 1)[0].split("#", 1)[0]:  # userinfo, also one whose key has a / in it
            raise ValueError("must not carry credentials (userinfo before @, not shown); name the environment "
                             "variable holding the key in api_key_env")
        if parts.query or parts.fragment:
            raise ValueError(f"must not have a query or fragment (got {shown_url(value)})")
        if not parts.hostname:
            raise ValueError(f"must be an http(s) URL with a host, such as http://127.0.0.1:8000/v1 "
                             f"(got {shown_url(value)})")
        try:
            parts.port
        except ValueError:
            raise ValueError(f"has a port that is not a number from 0 to 65535 (got {shown_url(value)})") from None
        return value.rstrip("/")

    @field_validator("api_key_env", mode="before")
    @classmethod
    def _variable_name(cls, value: object) -> object:
        if value is not None and not (isinstance(value, str) and _VARIABLE_NAME.fullmatch(value)):
            raise ValueError("must be the NAME of the environment variable that holds the key (letters, digits "
                             "and _, matching the pattern ^[A-Za-z_][A-Za-z0-9_]*$), never the key itself; "
                             "the value is not shown")
        return value


class EngineInfo(BaseModel):
    """The serving engine and the flags it was started with, as the user declares them.

    The server cannot report its own flags, so this is how a baseline server
    and an fp8-KV server behind one model name get different cache keys."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    version: str | None = None
    args: list[str] = Field(default_factory=list)


class OpenAIRunnerSettings(BaseModel):
    """`runner: openai`: the served engine this config's items go to, with the runner's own rule
    (a server is either reached at `openai.base_url` or launched from `server:`, never both)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    runner: Literal["openai"]
    openai: OpenAISettings
    engine: EngineInfo | None = None
    # the engine evalrun launches for this run (runners/openai/_server_process.py); without it, openai.base_url
    server: ServerSettings | None = None

    @model_validator(mode="before")
    @classmethod
    def _reached_or_launched(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        served = data.get("openai")
        base_url = served.get("base_url") if isinstance(served, dict) else getattr(served, "base_url", None)
        if data.get("server") is not None:
            if base_url is not None:
                raise RuleBroken("evalrun launches this config's server (`server:`) on a port it picks: remove base_url "
                                 "(or server:, to use a server you started)", path="openai.base_url")
            if served is None:
                return {**data, "openai": {}}
        elif base_url is None:
            raise RuleBroken("runner: openai needs an `openai:` mapping with at least base_url "
                             "(e.g. openai: {base_url: http://127.0.0.1:8000/v1}), or a `server:` command that "
                             "evalrun launches", path="openai.base_url" if served else "openai")
        return data


class KeyUnusable(UsageError, ValueError):
    """The named variable holds something no Authorization header can carry (the text never quotes it)."""


def api_key_from_env(settings: OpenAISettings) -> str | None:
    """The key from the named variable; None when no variable is named. Raises KeyError when it is
    unset, KeyUnusable when it has whitespace, control or non-ASCII characters (a trailing newline)."""
    if not settings.api_key_env:
        return None
    value = os.environ.get(settings.api_key_env)
    if not value:
        raise KeyError(settings.api_key_env)
    remember(value)  # even an unusable key is scrubbed from whatever is printed later
    problem = key_problem(value)
    if problem:
        raise KeyUnusable(problem)
    return value
