"""Process entry helpers shared by the services."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn


def serve(app: Any, host: str, port: int) -> None:
    """Run an ASGI app with uvicorn on uvloop, with httptools.

    ``uvicorn.Server.serve`` under a plain ``asyncio.run`` would use the stdlib loop: uvicorn
    only installs uvloop in its own ``run``, so the loop is chosen here.
    """
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
        # Forwarding headers are read by common.clientaddr, from SLUICE_TRUSTED_PROXIES only:
        # uvicorn's default would believe them from 127.0.0.1.
        proxy_headers=False,
    )
    server = uvicorn.Server(config)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency; stdlib loop elsewhere
        asyncio.run(server.serve())
    else:
        uvloop.run(server.serve())
