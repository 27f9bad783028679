"""The items a pack would give for some parameters, without a run (`evalrun export-pack`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from evalrun.contract.types import Item
from evalrun.evals.files import ConfigError, validation_error
from evalrun.evals.run._execute import RunFailed
from evalrun.runners.models import ModelError, ModelNotFound, load_tokenizer, resolve_model
from evalrun.tasks import PackDataError, get_pack


def export_pack(name: str, params: dict, model: str = "smollm2-135m") -> list[Item]:
    """The items a run would see for these pack parameters, sized with `model`'s tokenizer."""
    try:
        spec = get_pack(name)
    except KeyError as exc:
        raise ConfigError(str(exc.args[0]), path="pack") from None
    try:
        validated = spec.params.model_validate(params, context={"base_dir": Path.cwd()})
    except ValidationError as exc:
        raise validation_error(exc, "--param", "", spec.params) from None
    try:
        tokenizer = load_tokenizer(resolve_model(model))
    except ModelNotFound as exc:
        raise ConfigError(str(exc), path="--model") from None
    except ModelError as exc:
        raise RunFailed(str(exc)) from exc
    try:
        return spec.items(validated, lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"]))
    except PackDataError as exc:
        raise ConfigError(exc.message, file="--param", path=exc.key) from None
