"""The `server:` block of an `openai` config: how evalrun launches the engine it gates.

Apart from the process code (runners/openai/_server_process.py) so the config loader can
validate it without starting anything. What can change an answer (the command
with its flags, the environment, the engine's version) is the launch identity
that enters the run key; where it listens and how long it is waited for do not.
`env` often holds credentials (HF_TOKEN, an API key): outside the process that
launches the server each value is only its hash (manifest, key), and any value
long enough to be a secret is scrubbed from whatever evalrun prints or stores.
"""

from __future__ import annotations

import hashlib
import string
import subprocess
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator, model_validator

from evalrun.contract.errors import UsageError
from evalrun.runners.openai._api_key import remember_secrets

# what a command may name; {port} is the loopback port evalrun picks
PLACEHOLDERS = {
    "port": "the free 127.0.0.1 port evalrun picked",
    "host": "127.0.0.1",
    "model": "the config's `model`: the name the server must serve",
    "model_path": "the local file or directory the config's `model` resolves to (an alias's GGUF)",
}


def hashed_env(env: dict[str, str]) -> dict[str, str]:
    """`env` as it may be written down: each name with the sha256 of its value, sorted by name."""
    return {k: "sha256:" + hashlib.sha256(v.encode("utf-8", "surrogatepass")).hexdigest() for k, v in sorted(env.items())}


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


__all__ = ["PLACEHOLDERS", "ServerSettings", "VersionUnknown", "engine_version", "filled", "hashed_env",
           "placeholders_in"]
