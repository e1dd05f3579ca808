"""Process entry helpers shared by the services."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn


def serve(app: Any, host: str, port: int) -> None:
    """Run an ASGI app with uvicorn (uvloop and httptools when available)."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    asyncio.run(uvicorn.Server(config).serve())
