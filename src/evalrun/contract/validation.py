"""How a key path and a pydantic validation error are worded, once for every stage: whichever model
refuses its input, the user reads the key path (`tasks[0].fields.total.type`) and what is wrong there."""

from __future__ import annotations

from typing import Any, Mapping, get_args, get_origin

from pydantic import BaseModel, ValidationError

from evalrun.contract.errors import UsageError


class KeyedError(UsageError, ValueError):
    """A validator's refusal that knows which key below the validated one is wrong: `first_error`
    extends the error's key path by `key` ("kv_cache.quant"), so the user reads the full path."""

    def __init__(self, message: str, key: str = "") -> None:
        super().__init__(message)
        self.message, self.key = message, key


def key_path(parts: tuple[Any, ...] | list[Any]) -> str:
    """(a, b, 0, c) -> 'a.b[0].c'."""
    out = ""
    for part in parts:
        is_index = isinstance(part, int) and not isinstance(part, bool)
        out += f"[{part}]" if is_index else (f".{part}" if out else str(part))
    return out


def model_at(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model that owns the last key of `loc`, through nested models, dicts and lists."""
    current: Any = model
    pending_container = False
    for part in loc:
        if pending_container:  # a dict key or list index
            pending_container = False
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(str(part))
        if field is None:
            return None
        current = field.annotation
        origin = get_origin(current)
        if origin in (dict, list):
            args = [a for a in get_args(current) if a is not type(None)]
            current = args[-1] if args else None
            pending_container = True
        elif origin is not None:  # Optional[Model] and friends
            current = next((a for a in get_args(current) if isinstance(a, type) and issubclass(a, BaseModel)), None)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def error_message(err: Mapping[str, Any], model: type[BaseModel] | None = None, *, show_input: bool = True) -> str:
    """One pydantic error in the config loader's words. `model` is the validated model: an
    unknown key then lists the keys allowed where it stands. `show_input` adds the refused
    value to a type or range message (never for a mapping or a list, which may be long)."""
    err_type = err.get("type", "")
    if err_type == "extra_forbidden":
        owner = model_at(model, tuple(err.get("loc", ()))[:-1]) if model is not None else None
        return f"unknown key; allowed: {', '.join(sorted(owner.model_fields))}" if owner else "unknown key"
    if err_type == "missing":
        return "required key is missing"
    if err_type == "literal_error":
        return f"invalid value {err.get('input')!r}; allowed: {err.get('ctx', {}).get('expected', '')}"
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    if not show_input or err_type == "value_error" or isinstance(err.get("input"), (dict, list)):
        return msg
    return f"{msg} (got {err.get('input')!r})"


def first_error(exc: ValidationError, model: type[BaseModel] | None = None, *,
                show_input: bool = True) -> tuple[str, str]:
    """(key path, message) of the first problem pydantic found; a validator that knows which
    nested key is wrong (an exception with a `.key`, e.g. tasks.base.ParamError) extends the path."""
    err = exc.errors()[0]
    loc = tuple(err.get("loc", ()))
    key = getattr((err.get("ctx") or {}).get("error"), "key", None)
    if key:
        loc = (*loc, *str(key).split("."))
    return key_path(loc), error_message({**err, "loc": loc}, model, show_input=show_input)


def raised_by_validator(exc: ValidationError) -> bool:
    """The first problem is a validator's own message (which words its key itself)."""
    return exc.errors()[0].get("type") == "value_error"
