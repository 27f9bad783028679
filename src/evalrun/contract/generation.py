"""The decoding settings a runner generates with (a config's `generation:`), below every stage that reads them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class GenerationSettings(BaseModel):
    """Decoding settings; greedy unless a temperature above 0 is asked for."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)

    max_new_tokens: int = Field(default=48, ge=1, le=32768)
    temperature: float = Field(default=0.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    seed: int = 0

    @property
    def sampling(self) -> bool:
        return self.temperature > 0
