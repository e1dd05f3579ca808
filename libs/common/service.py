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
        log_level="info",  # start-up and shutdown lines (JSON); access log stays off
        log_config=None,  # no text handlers of uvicorn's own: its loggers propagate to the JSON root
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency; stdlib loop elsewhere
        asyncio.run(server.serve())
    else:
        uvloop.run(server.serve())
