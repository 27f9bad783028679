"""What a server says about itself outside the OpenAI API: llama.cpp's own server's GET /props."""

from __future__ import annotations

import json
from typing import Any


async def llama_props(root: str) -> dict[str, Any] | None:
    """llama.cpp's GET /props (build, model file, context), when the server has it; None otherwise."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=10.0) as client:
            resp = await client.get(f"{root}/props")
        data = resp.json() if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    return {k: data[k] for k in ("build_info", "model_path", "total_slots") if k in data} | (
        {"n_ctx": ctx} if isinstance(ctx, int) else {})


async def json_object(resp: Any, _start: float) -> dict[str, Any] | None:
    """A response body that is a JSON object (a listing), else None: a reader for ServerClient.send."""
    try:
        data = json.loads(await resp.aread())
        return data if isinstance(data, dict) else None
    except ValueError:
        return None


__all__ = ["json_object", "llama_props"]
