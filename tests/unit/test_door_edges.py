"""The door's edges that mutation testing found unpinned: how a credential is
read and remembered, the prebuilt 503 byte for byte, which requests have no lane, and exactly
what a finished request gives back to its lane. The lane here is a recording fake; the real
lanes: tests/unit/test_door.py and test_admission.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from gateway.door import asgi as module
from gateway.door.asgi import MESSAGE, PLACE, Door, Identities, Refusals

pytestmark = pytest.mark.unit


class Lane:
    """Admits everything; records each release."""

    def __init__(self) -> None:
        self.in_flight = 3
        self.released: list[tuple[Any, ...]] = []

    def admit(self, key: str, sandbox: bool, known: bool) -> str | None:
        return None

    def release(self, *args: Any) -> None:
        self.released.append(args)


def scope(method: str, path: str, authorization: bytes | None = None) -> dict[str, Any]:
    headers = [(b"authorization", authorization)] if authorization else []
    return {"type": "http", "method": method, "path": path, "headers": headers}


def test_a_credential_is_a_salted_16_byte_digest_and_raw_keys_count_too() -> None:
    ids = Identities()
    assert ids.size == 10000 and len(ids.salt) == 16
    key, sandbox, known = ids.of(b"Bearer sk_test_abc")
    assert key.startswith("unknown:") and len(key) == len("unknown:") + 32
    assert (sandbox, known) == (True, False)
    assert Identities().of(b"Bearer sk_test_abc")[0] != key  # another process, another salt
    assert ids.of(b"sk_test_abc") == (key, True, False)  # no scheme: the credential itself
    assert ids.of(b"bearer  sk_test_abc ")[0] == key


def test_learning_a_credential_again_keeps_its_place_in_the_eviction_order() -> None:
    ids = Identities(size=2)
    ids.learn("Bearer a", "ten_a", "live")
    ids.learn("Bearer b", "ten_b", "sandbox")
    ids.learn("Bearer a", "ten_a", "live")  # known already: nothing changes
    ids.learn("Bearer c", "ten_c", "live")  # full: the oldest (a) goes
    assert ids.of(b"Bearer a")[2] is False
    assert ids.of(b"Bearer b") == ("ten_b:sandbox", True, True)
    assert ids.of(b"Bearer c") == ("ten_c:live", False, True)


def test_the_503_is_written_byte_for_byte() -> None:
    r = Refusals()
    start, body = r.messages("tenant", b"req_1")
    expected = (
        b'{"success":false,"error":{"code":"provider_unavailable","message":"' + MESSAGE.encode() + b'",'
        b'"details":{"reason":"overloaded","bound":"tenant","request_id":"req_1"}}}'
    )
    assert body == {"type": "http.response.body", "body": expected, "more_body": False}
    assert start == {
        "type": "http.response.start",
        "status": 503,
        "headers": [
            (b"content-type", b"application/json"),
            (b"retry-after", b"1"),
            (b"content-length", str(len(expected)).encode()),
            (b"x-request-id", b"req_1"),
        ],
    }
    head = (
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
        + b"content-length: "
        + str(len(expected)).encode()
        + b"\r\nx-request-id: req_1\r\n"
    )
    assert r.raw("tenant", b"req_1", keep_alive=True) == head + b"\r\n" + expected
    assert r.raw("tenant", b"req_1", keep_alive=False) == head + b"connection: close\r\n\r\n" + expected


def test_options_and_the_exempt_paths_have_no_lane() -> None:
    d = Door(Lane(), Lane(), Identities())  # type: ignore[arg-type]
    assert d.lane("OPTIONS", "/v1/transfers") is None
    assert d.lane("GET", "/healthz") is None
    assert d.lane("POST", "/healthz") is d.commands
    assert d.lane("GET", "/v1/transfers") is d.reads
    sc = scope("GET", "/readyz")
    assert d.decide(sc) is None and PLACE not in sc


async def test_what_has_no_lane_runs_with_its_own_receive_and_send() -> None:
    d = Door(Lane(), Lane(), Identities())  # type: ignore[arg-type]
    seen: list[tuple[Any, ...]] = []

    async def app(sc: Any, receive: Any, send: Any) -> None:
        seen.append((sc, receive, send))

    async def receive() -> None: ...

    async def send(message: Any) -> None: ...

    for sc in ({"type": "lifespan"}, scope("GET", "/healthz")):
        await d.around(app)(sc, receive, send)
        assert seen[-1] == (sc, receive, send)


async def test_a_finished_request_gives_back_its_place_with_its_latency(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ticks = iter([100.0, 100.25, 200.0, 200.5])
    monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=lambda: next(ticks)))
    commands = Lane()
    d = Door(commands, Lane(), Identities())  # type: ignore[arg-type]
    d.identities.learn("Bearer sk_live_x", "ten_a", "live")

    async def ok(sc: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 201, "headers": []})

    async def fails(sc: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("before any answer")

    async def send(message: Any) -> None: ...

    sc = scope("POST", "/v1/transfers", b"Bearer sk_live_x")
    await d.around(ok)(sc, None, send)
    assert commands.released == [("ten_a:live", False, 0.25, 3, 100.25, True)]
    with pytest.raises(RuntimeError):
        await d.around(fails)(scope("POST", "/v1/transfers", b"Bearer sk_test_y"), None, send)
    key = d.identities.of(b"Bearer sk_test_y")[0]
    assert commands.released[-1] == (key, True, None, 3, 200.5, False)  # nothing answered: no latency
