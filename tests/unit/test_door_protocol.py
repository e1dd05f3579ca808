"""The door in uvicorn's protocol (docs/performance/overload.md): on a real uvicorn server and real sockets,
a request beyond the limit is answered the prebuilt 503 from the parser callback, no ASGI task
is made for it (the app and the ASGI door never see it), its body is ignored, the connection
stays open for the next request, and an admitted request's place is given back by the ASGI
door. Under a uvicorn this was not tested with, the protocol is off (the ASGI door alone)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import uvicorn

from gateway.door import protocol as dp
from gateway.door.admission import READS, Admission
from gateway.door.asgi import Door, Identities

pytestmark = pytest.mark.unit


class App:
    """Answers 201 once ``release`` is set; counts the requests it saw."""

    def __init__(self) -> None:
        self.calls = 0
        self.release = asyncio.Event()
        self.entered = asyncio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.calls += 1
        self.entered.set()
        while (await receive()).get("more_body"):
            pass
        await self.release.wait()
        await send({"type": "http.response.start", "status": 201, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"{}"})


class Counted:
    """The ASGI door's own view: how many requests reached it at all."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.calls += 1
        await self.inner(scope, receive, send)


@asynccontextmanager
async def server(app: Any, door: Door) -> AsyncIterator[int]:
    protocol = dp.door_protocol(door)
    assert protocol is not None
    config = uvicorn.Config(app, host="127.0.0.1", port=0, http=protocol, lifespan="off", log_config=None)
    srv = uvicorn.Server(config)
    task = asyncio.create_task(srv.serve())
    while not srv.started:  # noqa: ASYNC110 - uvicorn.Server.started is a plain flag
        await asyncio.sleep(0.01)
    try:
        yield srv.servers[0].sockets[0].getsockname()[1]
    finally:
        srv.should_exit = True
        await asyncio.wait_for(task, 10)


def request(body: bytes = b'{"amount":"1"}', *, close: bool = False, auth: str = "sk_live_a") -> bytes:
    head = (
        f"POST /v1/transfers HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {auth}\r\n"
        f"X-Request-Id: req-7\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        + ("Connection: close\r\n" if close else "")
        + "\r\n"
    )
    return head.encode() + body


async def answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    status = int((await reader.readline()).split()[1])
    headers = {}
    while (line := await reader.readline()) != b"\r\n":
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, await reader.readexactly(int(headers["content-length"]))


def one_place() -> Door:
    commands = Admission(1, 1, initial=1, min_limit=1)
    return Door(commands, Admission(1, 1, initial=1, min_limit=1, metrics=READS), Identities())


async def test_a_refusal_is_written_by_the_protocol_and_no_task_sees_it() -> None:
    door, app = one_place(), App()
    outer = Counted(door.around(app))
    async with server(outer, door) as port:
        r1, w1 = await asyncio.open_connection("127.0.0.1", port)
        w1.write(request())
        await asyncio.wait_for(app.entered.wait(), 10)  # the one place is taken
        r2, w2 = await asyncio.open_connection("127.0.0.1", port)
        w2.write(request(auth="sk_live_b"))
        status, headers, body = await asyncio.wait_for(answer(r2), 10)
        assert status == 503
        assert headers["retry-after"] == "1" and headers["x-request-id"] == "req-7"
        assert "connection" not in headers  # keep-alive
        details = json.loads(body)["error"]["details"]
        assert details == {"reason": "overloaded", "bound": "instance", "request_id": "req-7"}
        assert (outer.calls, app.calls) == (1, 1)  # neither the ASGI door nor the app saw it
        app.release.set()
        assert (await asyncio.wait_for(answer(r1), 10))[0] == 201
        assert door.commands.in_flight == 0  # the admitted request's place was given back
        w2.write(request(auth="sk_live_b"))  # the same connection, now admitted
        assert (await asyncio.wait_for(answer(r2), 10))[0] == 201
        assert (outer.calls, app.calls, door.commands.in_flight) == (2, 2, 0)
        for w in (w1, w2):
            w.close()


async def test_a_refused_request_asking_to_close_is_closed_after_its_503() -> None:
    door, app = one_place(), App()
    async with server(door.around(app), door) as port:
        _, w1 = await asyncio.open_connection("127.0.0.1", port)
        w1.write(request())
        await asyncio.wait_for(app.entered.wait(), 10)
        r2, w2 = await asyncio.open_connection("127.0.0.1", port)
        w2.write(request(b"x" * 100_000, close=True))  # a body far over one read: ignored
        status, headers, _ = await asyncio.wait_for(answer(r2), 10)
        assert (status, headers["connection"]) == (503, "close")
        assert await asyncio.wait_for(r2.read(), 10) == b""  # closed by the server
        app.release.set()
        w1.close()


def test_the_protocol_is_off_under_another_uvicorn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dp.uvicorn, "__version__", "0.99.0")
    assert dp.door_protocol(one_place()) is None


def test_the_installed_uvicorn_is_the_one_the_protocol_was_tested_with() -> None:
    """Upgrading uvicorn fails here: read its httptools protocol's ``_start_asgi_task`` and
    ``on_response_complete`` again, then move ``TESTED_UVICORN``."""
    assert uvicorn.__version__ == dp.TESTED_UVICORN
