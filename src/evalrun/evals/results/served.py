"""The `openai` runner of a config: against a URL, or against the engine its `server:` launches.

A `server:` is made ready (placeholders, executable, version) before anything starts: a stored run is found by
its launch identity without launching, and a command that cannot start is exit 2, not a failure an hour later."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Callable

from evalrun.evals.files import ConfigError
from evalrun.evals.config import OpenAIRunConfig
from evalrun.evals.results._runs import PreparedRun
from evalrun.runners.base import Runner
from evalrun.runners.models import ModelError, ModelSource, resolve_model
from evalrun.runners.openai import ServerProcess, VersionUnknown, engine_version, placeholders_in


def _model_path(config: OpenAIRunConfig, tokenizer: ModelSource) -> str:
    """{model_path}: the local weights `model` resolves to (the tokenizer's when they are the same spec)."""
    try:
        source = tokenizer if tokenizer.spec == config.model else resolve_model(config.model)
    except ModelError as exc:
        raise ConfigError(f"the command uses {{model_path}}, but `model` names no local file: {exc}",
                          file=config.source, path="server.command") from None
    if source.kind not in ("gguf", "dir"):
        raise ConfigError(f"the command uses {{model_path}}, but `model` ({config.model!r}) is a hub id, not a local "
                          "file or directory", file=config.source, path="server.command")
    return source.location


def _check_executable(word: str, config: OpenAIRunConfig, path: str) -> None:
    found = Path(word).exists() if "/" in word else shutil.which(word) is not None
    if not found:
        where = f"relative to the current directory {os.getcwd()}" if "/" in word and not word.startswith("/") else "on PATH"
        raise ConfigError(f"{word!r} not found ({where}); the example engines are built by `make engines-llamacpp`",
                          file=config.source, path=path)


def launched_server(config: OpenAIRunConfig, tokenizer: ModelSource,
                    api_key: str | None = None) -> tuple[ServerProcess, dict[str, Any]]:
    """The server to launch when an item is missing, and its launch identity for the run key."""
    settings = config.server
    assert settings is not None
    words = [*settings.command, *(settings.version_command or [])]
    values = {"model": config.model}
    if any("model_path" in placeholders_in(w) for w in words):
        values["model_path"] = _model_path(config, tokenizer)
    _check_executable(settings.command[0], config, "server.command")
    env = dict(os.environ) | settings.env
    if settings.version_command:
        _check_executable(settings.version_command[0], config, "server.version_command")
    try:
        version = engine_version(settings, values | {"host": "127.0.0.1", "port": "0"}, env)
    except VersionUnknown as exc:
        raise ConfigError(f"could not learn the engine's version: {exc}", file=config.source,
                          path="server.version_command") from None
    server = ServerProcess(settings, config.source or "<config>", values, api_key=api_key,
                           api_key_env=config.openai.api_key_env)
    return server, settings.launch_identity(version)


def openai_runner(config: OpenAIRunConfig) -> tuple[Runner, ModelSource, str, str]:
    """A runner for a remote server; its identity is what the server reports plus the local tokenizer's."""
    from evalrun.runners.models import ModelNotFound
    from evalrun.runners.openai import KeyUnusable, api_key_from_env, variable_words
    from evalrun.runners.openai.runner import OpenAIRunner

    settings = config.openai
    tok_spec = settings.tokenizer or config.model
    try:
        tok_source = resolve_model(tok_spec)
    except ModelNotFound as exc:
        hint = "" if settings.tokenizer else (
            f"; the tokenizer defaults to `model` ({config.model!r}): set openai.tokenizer to a local model "
            "directory, .gguf file, alias or hub id with the served model's tokenizer")
        raise ConfigError(f"{exc}{hint}", file=config.source,
                          path="openai.tokenizer" if settings.tokenizer else "model") from None
    try:
        api_key = api_key_from_env(settings)
    except KeyError:
        raise ConfigError(f"{variable_words(settings.api_key_env or '')} is not set (it should hold the API key)",
                          file=config.source, path="openai.api_key_env") from None
    except KeyUnusable as exc:  # the key is never quoted, only what is wrong with it
        raise ConfigError(f"the API key in {variable_words(settings.api_key_env or '')} cannot be sent: {exc} "
                          "(the key is not shown)", file=config.source, path="openai.api_key_env") from None
    if config.server is not None:
        # launched only when an item is missing: its identity is its launch, known without starting it
        server, launch = launched_server(config, tok_source, api_key)
        runner = OpenAIRunner(settings, config.model, tok_source, api_key, server=server)
        identity = {"served_model": config.model, "server_launch": launch, "tokenizer": tok_source.identity}
        return runner, ModelSource(config.model, "openai", "launched by evalrun", identity), "remote", "server"
    runner = OpenAIRunner(settings, config.model, tok_source, api_key)
    runner.probe()
    source = ModelSource(
        config.model, "openai", settings.base_url or "",
        {"served_model": config.model, "server_reported": runner.server_identity(), "tokenizer": tok_source.identity},
    )
    return runner, source, "remote", "server"


def shared_keys(plan: list[PreparedRun]) -> list[str]:
    """A warning per pair of served configs with one run key but other servers: a flags change would reuse a run."""
    out = []
    seen: dict[str, PreparedRun] = {}
    for p in plan:
        if p.replicate or not isinstance(p.config, OpenAIRunConfig) or p.config.openai is None:
            continue
        first = seen.setdefault(p.key, p)
        there, here = first.config, p.config
        assert isinstance(there, OpenAIRunConfig) and there.openai is not None
        if first is not p and there.openai.base_url != p.config.openai.base_url:
            out.append(f"WARNING: {there.name} and {here.name} have the same run key ({p.key[:12]}) but reach different "
                       f"servers ({there.openai.base_url}, {p.config.openai.base_url}): the key cannot tell their "
                       "engines apart; record each server's flags under `engine:` (or let evalrun launch it with "
                       "`server:`) so a change of flags is a new run, not a stored one reused")
    return out


def before_runs(plan: list[PreparedRun], keep: bool, log: Callable[[str], None]) -> None:
    """Before any run: the shared-key warnings, and --keep-servers (a launched server stays up, for debugging)."""
    for line in shared_keys(plan):
        log(line)
    for p in plan:
        server = getattr(p.runner, "server", None)
        if server is not None and keep:
            server.keep = True
            server.on_kept = lambda url, pid, label=p.label: log(
                f"{label}: server left up at {url} (process group {pid}; stop it with kill -TERM -- -{pid})")

