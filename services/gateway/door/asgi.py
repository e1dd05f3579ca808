"""The door (docs/performance/overload.md): overload refused before the app.

:class:`Door` is the gateway's outermost ASGI handler: it runs before Litestar's routing, its
middleware, the request id, authentication and any read of the body. From the method, the
path and the ``Authorization`` header alone it puts a request in a lane (commands: every
``POST``/``PUT``/``PATCH``/``DELETE``; reads: the rest; health, readiness and the API
reference in none) and asks that lane's :class:`gateway.door.admission.Admission` for a place. A
refusal is written at once from prebuilt bytes: ``503``, ``Retry-After``, the error envelope
(``provider_unavailable``, ``details.reason`` ``overloaded``, ``details.bound``, the request id
spliced in), on a connection that stays open, with a counter and no log line.

Who is asking is only known after authentication, so the door uses what is cheap
(:class:`Identities`): a keyed hash of the bearer credential, mapped to the tenant and mode
that the pipeline learnt the last time that credential authenticated. A credential never seen
to authenticate counts as itself (``sk_test_`` is sandbox, anything else live) but claims no
fair share: unknown or forged credentials cannot each borrow places past the limit, and a key
is its tenant's from its first request that got through.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass
from typing import Any

import msgspec

from common.errors import ErrorCode, Unavailable, envelope
from common.ids import new_id
from gateway.door.admission import Admission

ASGIApp = Any  # (scope, receive, send) -> Awaitable[None]; litestar.types.ASGIApp
_SAFE_RID = re.compile(rb"^[A-Za-z0-9._:-]{1,128}$")
_MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_EXEMPT = frozenset({"/healthz", "/readyz", "/v1/health", "/schema", "/schema/openapi.json", "/docs"})
MESSAGE = "the gateway is at capacity; nothing was done: retry with the same Idempotency-Key"
_MARK = "\x01rid\x01"


PLACE = "sluice.door.place"  # the scope key of an admitted request's place


@dataclass(frozen=True, slots=True)
class Place:
    """An admitted request's place in its lane, until it is given back."""

    lane: Admission
    key: str
    sandbox: bool
    known: bool
    in_flight: int  # the lane's work when it was admitted
    began: float  # time.monotonic() at admission


class Identities:
    """Bearer credential -> (tenant key, sandbox?), as cheaply as the door can tell."""

    def __init__(self, size: int = 10000) -> None:
        self.size = size
        self.salt = os.urandom(16)  # the digests mean nothing outside this process
        self.known: dict[bytes, tuple[str, bool]] = {}

    def _digest(self, credential: bytes) -> bytes:
        return hashlib.blake2b(credential, digest_size=16, key=self.salt).digest()

    @staticmethod
    def _credential(authorization: bytes) -> bytes:
        return authorization[7:].strip() if authorization[:7].lower() == b"bearer " else authorization.strip()

    def of(self, authorization: bytes | None) -> tuple[str, bool, bool]:
        """(tenant key, sandbox?, known?): a credential not yet seen to authenticate is a key of
        its own (its digest), sandbox if it says ``sk_test_``, and has no fair share to claim."""
        if not authorization:
            return "anonymous", False, False
        credential = self._credential(authorization)
        digest = self._digest(credential)
        known = self.known.get(digest)
        if known is not None:
            return known[0], known[1], True
        return "unknown:" + digest.hex(), credential.startswith(b"sk_test_"), False

    def learn(self, authorization: str | None, tenant_id: str, mode: str) -> None:
        """After authentication: this credential is ``tenant_id`` in ``mode`` from now on."""
        if not authorization:
            return
        digest = self._digest(self._credential(authorization.encode("latin-1")))
        sandbox = mode == "sandbox"
        entry = (f"{tenant_id}:{mode}", sandbox)
        if self.known.get(digest) == entry:
            return
        if len(self.known) >= self.size:
            self.known.pop(next(iter(self.known)))
        self.known[digest] = entry


class Refusals:
    """The prebuilt 503 of each bound: status line fields, headers and body around the id."""

    def __init__(self, retry_after_s: int = 1) -> None:
        self.start_headers = [
            (b"content-type", b"application/json"),
            (b"retry-after", str(retry_after_s).encode()),
        ]
        self.bodies: dict[str, tuple[bytes, bytes]] = {}
        for bound in ("instance", "tenant", "sandbox", "queue"):
            details = {"reason": str(Unavailable.OVERLOADED), "bound": bound, "request_id": _MARK}
            body = msgspec.json.encode(envelope(ErrorCode.PROVIDER_UNAVAILABLE, MESSAGE, details))
            head, _, tail = body.partition(msgspec.json.encode(_MARK)[1:-1])
            self.bodies[bound] = (head, tail)

    def raw(self, bound: str, rid: bytes, keep_alive: bool) -> bytes:
        """The whole HTTP/1.1 response, for a server protocol that writes it itself."""
        start, body = self.messages(bound, rid)
        headers = [*start["headers"], *([] if keep_alive else [(b"connection", b"close")])]
        head = b"".join(name + b": " + value + b"\r\n" for name, value in headers)
        return b"HTTP/1.1 503 Service Unavailable\r\n" + head + b"\r\n" + body["body"]

    def messages(self, bound: str, rid: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
        head, tail = self.bodies[bound]
        body = head + rid + tail
        headers = [
            *self.start_headers,
            (b"content-length", str(len(body)).encode()),
            (b"x-request-id", rid),
        ]
        return (
            {"type": "http.response.start", "status": 503, "headers": headers},
            {"type": "http.response.body", "body": body, "more_body": False},
        )


def request_id(headers: list[tuple[bytes, bytes]]) -> bytes:
    for name, value in headers:
        if name == b"x-request-id":
            return value if _SAFE_RID.match(value) else new_id("req").encode()
    return new_id("req").encode()


class Door:
    """Wraps the gateway's ASGI handler: admits (and times) or refuses each request."""

    def __init__(
        self, commands: Admission, reads: Admission, identities: Identities, retry_after_s: int = 1
    ) -> None:
        self.commands = commands
        self.reads = reads
        self.identities = identities
        self.refusals = Refusals(retry_after_s)

    def lane(self, method: str, path: str) -> Admission | None:
        if method in _MUTATING:
            return self.commands
        if method == "OPTIONS" or path in _EXEMPT:
            return None
        return self.reads

    def decide(self, scope: Any) -> tuple[str, bytes] | None:
        """The door's decision for a request's head: ``(bound, request id)`` if refused (nothing
        was taken); else None, and an admitted request's place is kept in ``scope`` under
        ``PLACE`` for :meth:`around` to time and give back."""
        lane = self.lane(scope["method"], scope["path"])
        if lane is None:
            return None
        headers = scope["headers"]
        authorization = next((v for k, v in headers if k == b"authorization"), None)
        key, sandbox, known = self.identities.of(authorization)
        bound = lane.admit(key, sandbox, known)
        if bound is not None:
            return bound, request_id(headers)
        scope[PLACE] = Place(lane, key, sandbox, known, lane.in_flight, time.monotonic())
        return None

    def around(self, app: ASGIApp) -> ASGIApp:
        async def door(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            place = scope.pop(PLACE, None)  # taken already by the server's protocol (door_protocol)
            if place is None:
                refused = self.decide(scope)
                if refused is not None:
                    start, body = self.refusals.messages(*refused)
                    await send(start)
                    await send(body)
                    return
                place = scope.pop(PLACE, None)
            if place is None:  # no lane: health, readiness, the API reference
                await app(scope, receive, send)
                return
            status = 0

            async def watched(message: Any) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                await send(message)

            try:
                await app(scope, receive, watched)
            finally:
                now = time.monotonic()
                # A 4xx (refused by a check, or a replay) says nothing about the capacity; a
                # success or a 5xx (a timeout, a store down) does.
                learn = status < 400 or status >= 500
                rtt = now - place.began if learn and status else None
                place.lane.release(place.key, place.sandbox, rtt, place.in_flight, now, place.known)

        return door
