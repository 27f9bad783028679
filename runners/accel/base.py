"""What an acceleration method is.

A method is applied to a loaded model through hooks, a cache object or extra
`generate` arguments, and reports what it actually did. The runner only calls
these methods, so adding a method never touches the pipeline.
"""

from __future__ import annotations

from typing import Any, ClassVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict


def cache_kwarg() -> str:
    """The name under which this transformers version takes a cache object in `generate`."""
    try:
        from transformers.generation.utils import ALL_CACHE_NAMES
    except ImportError:
        return "past_key_values"
    return "cache" if "cache" in ALL_CACHE_NAMES else "past_key_values"


def model_at(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model that owns the last key of `loc`, through nested models, dicts and lists."""
    current: Any = model
    pending_container = False
    for part in loc:
        if pending_container:  # this part is a dict key or list index
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


# Bounds for settings counted in tokens: a value past these is no setting at all
# (a quantization group or budget larger than any context leaves the cache untouched).
LONGEST_CONTEXT = 1 << 20  # tokens; the longest context a served model plausibly has
MAX_TOKEN_GROUP = 8192  # tokens (or channels) in one quantization group / residual window


class AccelSettings(BaseModel):
    """Base of every method's settings: unknown keys are configuration errors, and
    inf/nan are refused (nothing means anything at infinity, and JSON cannot hold them)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Acceleration:
    """One configured acceleration, bound to one run."""

    name: ClassVar[str]
    settings_model: ClassVar[type[AccelSettings]]
    # True when the method changes results but not real cost (e.g. masked dense
    # matmuls): reports then make no speed claim.
    emulated: ClassVar[bool] = False
    description: ClassVar[str] = ""
    # Largest batch the method can generate (assisted generation runs one sequence at a time);
    # an instance may narrow it from its settings.
    max_batch_size: int | None = None
    # True when the method must see the context before the question (query-agnostic KV
    # compression): the runner then prefills the item's `Item.context` first,
    # through the cache this method supplies, and generates the rest from there.
    context_prefill: bool = False
    # False when the method supplies its own cache or drafts tokens: shared-prefix reuse is then off
    supports_prefix_reuse: ClassVar[bool] = True
    # True when the method changes the weights: the runner then gives it a private
    # copy of the loaded model, so other runs in the process keep the original.
    modifies_weights: ClassVar[bool] = False

    def __init__(self, settings: AccelSettings):
        self.settings = settings

    def key_extras(self) -> dict[str, Any]:
        """What else can change outputs beyond the settings (e.g. a draft model's
        content hash); part of the run's cache key."""
        return {}

    def prepare_model(self, model: Any) -> Any:
        """Return the model to generate with (only called when `modifies_weights`)."""
        return model

    def attach(self, model: Any) -> None:
        """Install hooks on the model; called once before the run's first batch."""

    def detach(self, model: Any) -> None:
        """Remove whatever attach installed, so a shared loaded model is left clean."""

    def generate_kwargs(self, model: Any, batch_size: int) -> dict[str, Any]:
        """Extra `generate` arguments for one call; must be fresh objects each call."""
        return {}

    def observe(self, model: Any, outputs: Any) -> None:
        """Look at one finished `generate` call to record what the method did."""

    def effects(self) -> dict[str, Any]:
        """Evidence that the method took effect, for the run manifest."""
        return {}
