"""Task packs: parameters -> deterministic Items. Registered by name (see registry)."""

from __future__ import annotations

from evalrun.tasks.base import BuildOptions, PackDataError, PackParams, PackSpec, ParamError, TokenCounter
from evalrun.tasks.registry import all_packs, get_pack, register

__all__ = ["BuildOptions", "PackDataError", "PackParams", "PackSpec", "ParamError", "TokenCounter", "get_pack",
           "all_packs", "register"]
