"""The door in the server's protocol (docs/performance/overload.md): a refusal is written from
uvicorn's parser callback, before any task exists, so it does not wait behind admitted work.

uvicorn parses a request's head in ``HttpToolsProtocol.on_headers_complete`` and then starts its
ASGI task (``_start_asgi_task``). A refusal made by the ASGI door (:meth:`gateway.door.asgi.Door.around`)
runs in that task, so it waits until the event loop reaches it: behind every callback that
became ready first, the admitted requests' work included. :func:`door_protocol` asks the door
before the task is made: a refused request's prebuilt 503 goes to the socket inside the read
callback, and the task is never created (the request's body, if any, is ignored as uvicorn
ignores the body of any answered request; the connection stays open unless the client asked to
close it). An admitted request carries its place in its scope to the ASGI door, which times it
and gives it back, as it does for every request when the gateway runs under another server.

``_start_asgi_task`` is uvicorn's, not a public API: the protocol is used only with the uvicorn
version it was written and tested against (``TESTED_UVICORN``; a unit test fails when the
installed one differs), and otherwise the gateway logs that and keeps the ASGI door alone.
"""

from __future__ import annotations

import logging
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from gateway.door.asgi import Door

TESTED_UVICORN = "0.54.0"
log = logging.getLogger("gateway.door.asgi")


def door_protocol(door: Door) -> type[HttpToolsProtocol] | None:
    """uvicorn's httptools protocol with the door in front of its ASGI task; None (the ASGI
    door alone) under a uvicorn this was not tested with."""
    if uvicorn.__version__ != TESTED_UVICORN:
        log.warning(
            "door_protocol_off",
            extra={"uvicorn": uvicorn.__version__, "tested": TESTED_UVICORN},
        )
        return None

    class DoorProtocol(HttpToolsProtocol):
        def _start_asgi_task(self, cycle: Any, app: Any) -> None:
            refused = door.decide(cycle.scope)
            if refused is None:
                super()._start_asgi_task(cycle, app)
                return
            self.transport.write(door.refusals.raw(*refused, keep_alive=cycle.keep_alive))
            cycle.response_started = cycle.response_complete = True
            if not cycle.keep_alive:
                self.transport.close()
            self.on_response_complete()

    return DoorProtocol
