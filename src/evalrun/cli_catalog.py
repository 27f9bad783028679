"""The catalog commands: `evalrun accelerations` and `evalrun packs list|export`,
which describe what a config can name rather than run a comparison."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args, get_origin

import typer
import yaml
from rich.markup import escape

from evalrun.cli_app import _guard, console
from evalrun.evals import api
from evalrun.evals.files import ConfigError, YamlProblem, load_strict

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.table import Table


def _table(title: str, *columns: str) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col)
    return table


def _type_text(annotation: object) -> str:
    """A settings type as a user writes it: the allowed values of a Literal, else the type's name."""
    if get_origin(annotation) is Literal:
        return " | ".join(str(a) for a in get_args(annotation))
    args = get_args(annotation)
    if args:
        return " | ".join(_type_text(a) for a in args if a is not type(None)) + (" | none" if type(None) in args else "")
    return getattr(annotation, "__name__", str(annotation))


def _settings_lines(model: type[BaseModel], prefix: str = "") -> list[str]:
    """One line per setting; nested settings models are expanded as dotted keys."""
    from pydantic import BaseModel

    lines: list[str] = []
    for field, f in model.model_fields.items():
        nested = next((a for a in (f.annotation, *get_args(f.annotation))
                       if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if nested is not None:
            lines.append(f"{prefix}{field}: mapping" + (" (required)" if f.is_required() else " (optional)"))
            lines.extend(_settings_lines(nested, f"{prefix}{field}."))
            continue
        default = " (required)" if f.is_required() else f" (default {f.get_default(call_default_factory=True)!r})"
        lines.append(f"{prefix}{field}: {_type_text(f.annotation)}{default}")
    return lines


def accelerations() -> None:
    """Acceleration methods with their settings (defaults) and whether they are emulated."""
    from evalrun.runners.accel import all_methods

    table = _table("accelerations (acceleration: {KEY: {settings}})", "key", "settings (default)", "emulated",
                   "continuous batching", "description")
    for name, cls in sorted(all_methods().items()):
        settings = "\n".join(_settings_lines(cls.settings_model))
        emulated = "yes — no speed claim" if cls.capabilities.emulated else "no"
        continuous = "yes" if cls.capabilities.continuous_batching else "no"
        table.add_row(name, escape(settings), emulated, continuous, escape(cls.describe()))
    console.print(table)
    _runner_modes()


def _runner_modes() -> None:
    """How the hf runner batches: not a method (it changes no weight or cache value), but it can change
    outputs and speed, so a candidate may change only this."""
    from evalrun.runners.hf import BatchingSettings

    table = _table("runner modes (runner: hf; batching: {mode: MODE, ...})", "mode", "settings (default)",
                   "description")
    table.add_row("static (default)", "batch_size (4)",
                  "length-sorted, left-padded batches of batch_size items, each generated to its longest answer")
    settings = "\n".join(line for line in _settings_lines(BatchingSettings) if not line.startswith("mode"))
    table.add_row("continuous", escape(settings), escape(
        "transformers continuous batching over a paged KV cache: requests join the running batch when the cache "
        "has room and leave it when they finish, no padding. num_blocks null sizes the cache to the static "
        "runner's largest batch (same memory); attention stays sdpa/eager (never switched to flash). CPU and "
        "CUDA. Methods marked 'continuous batching: no' above are config errors with it."))
    console.print(table)


packs_app = typer.Typer(help="List task packs and export their items.", no_args_is_help=True)


@packs_app.command("list")
def packs_list() -> None:
    """Name, version, parameters (with defaults) and purpose of every pack."""
    from evalrun.tasks import all_packs

    table = _table("task packs", "pack", "version", "parameters (default)", "description")
    for spec in all_packs().values():
        params = "\n".join(
            f"{name} ({'required' if f.is_required() else f.get_default(call_default_factory=True)!r})"
            for name, f in spec.params.model_fields.items()
        )
        table.add_row(spec.name, spec.version, escape(params), escape(spec.description))
    console.print(table)


def _parse_params(pairs: list[str]) -> dict:
    """KEY=VALUE pairs, each value read as YAML the way a config's would be (so [512,1024] is a
    list); a value YAML cannot read is a ConfigError that says how to pass it as a string."""
    params: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError("expected KEY=VALUE, e.g. lengths=[512,1024]", path=f"--param {pair!r}")
        key = key.strip()
        try:
            params[key] = load_strict(value)
        except (yaml.YAMLError, YamlProblem) as exc:
            quoted = shlex.quote(f"{key}={json.dumps(value, ensure_ascii=False)}")  # JSON's escapes are YAML's
            raise ConfigError(f"the value is parsed as YAML and could not be read ({_yaml_problem(exc)}); quote it "
                              f"as a YAML string, e.g. --param {quoted}", path=f"--param {key}") from None
    return params


def _yaml_problem(exc: Exception) -> str:
    """The parser's complaint in one line (what, and where in the value)."""
    if isinstance(exc, YamlProblem):
        return exc.message
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{problem} at column {mark.column + 1}" if mark is not None else problem


@packs_app.command("export")
def packs_export(
    pack: str = typer.Argument(..., help="Pack name (see `evalrun packs list`)."),
    param: list[str] = typer.Option([], "--param", help="Pack parameter KEY=VALUE (YAML value); repeatable."),
    out: Path = typer.Option(..., "--out", help="Write the items here as JSON Lines."),
    model: str = typer.Option("smollm2-135m", "--model", help="Model whose tokenizer measures context lengths."),
) -> None:
    """Write a pack's items exactly as a run would see them (for review and determinism checks)."""

    def go() -> None:
        items = api.export_pack(pack, _parse_params(param), model)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(it.model_dump_json() + "\n" for it in items), encoding="utf-8")
        console.print(f"{len(items)} items written to {escape(str(out))}")

    _guard(go)
