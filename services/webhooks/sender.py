"""The only network code of webhooks: posting a signed body to a vetted address.

Connections are kept alive and pooled per ``(endpoint, scheme, host name, port, address)``: one
aiohttp session per key, its connector bounded to ``Policy.per_endpoint`` connections; endpoints
on the same host never share (or wait for) each other's connections. The request goes
to the vetted IP address with the name in ``Host``, TLS SNI and certificate verification
(``server_hostname``), so a pooled connection carries one name only and is never reused for
another name served by the same address. Sessions unused for ``IDLE_CLIENT_S`` are closed.

aiohttp rather than httpx: on this machine httpx spent 1.3 ms of CPU per keep-alive POST and
aiohttp 0.07 ms (16 concurrent, same local receiver); the client was half of the delivery
worker's CPU. aiohttp speaks HTTP/1.1 only: an endpoint gets up to ``per_endpoint`` keep-alive
connections where HTTP/2 would multiplex one.
"""

from __future__ import annotations

import asyncio
import random
import ssl
import time
from dataclasses import dataclass

import aiohttp
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    retry_if_not_exception_type,
    stop_after_attempt,
    wait_exponential,
)
from yarl import URL

from common.settings import Settings
from webhooks.targets import SYSTEM, Resolver, Target, TargetError, vet

CONNECT_TRIES = 3
IDLE_CLIENT_S = 60.0
# An idle pooled connection is closed before common servers close theirs (Node.js and
# uvicorn: 5 s): reusing one the server is closing at that moment is a reset request, a
# failed attempt (26 of 8,000 with 30 s here, in a test with two webhooks processes).
KEEPALIVE_S = 4.0
MAX_BODY = 64 * 1024


@dataclass(frozen=True, slots=True)
class Outcome:
    status_code: int | None
    error: str | None
    latency_ms: int

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


@dataclass(frozen=True, slots=True)
class Policy:
    schedule: tuple[float, ...]
    jitter: float
    timeout_s: float
    disable_after_s: float
    allow_private: bool
    per_endpoint: int = 32  # deliveries in flight (and connections) per endpoint
    max_in_flight: int = 256  # deliveries in flight per process

    @classmethod
    def from_settings(cls, s: Settings) -> Policy:
        return cls(
            tuple(s.retry_schedule),
            s.webhooks_jitter,
            s.webhooks_timeout_s,
            float(s.webhooks_disable_after_s),
            s.webhooks_allow_private_targets,
            s.webhooks_endpoint_concurrency,
            s.webhooks_max_in_flight,
        )

    @property
    def max_attempts(self) -> int:
        return len(self.schedule) + 1

    @property
    def lease_s(self) -> float:
        return self.timeout_s + 10.0

    def retry_in(self, attempt: int, max_attempts: int) -> float | None:
        """Seconds until the attempt after ``attempt`` (1-based), None when none is left."""
        if attempt >= max_attempts or not self.schedule:
            return None
        base = self.schedule[min(attempt, len(self.schedule)) - 1]
        return max(0.0, base * (1 + random.uniform(-self.jitter, self.jitter)))  # retry jitter, not a secret  # nosec B311


PoolKey = tuple[str, str, str, int, str]  # endpoint, scheme, host name, port, vetted address

# Failures to connect: the request never left, so they are retried within the attempt (but not
# a certificate the name does not verify: trying again changes nothing).
CONNECT_FAILURES = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)
RETRY_CONNECT = retry_if_exception_type(CONNECT_FAILURES) & retry_if_not_exception_type(
    aiohttp.ClientSSLError
)


class Sender:
    """Posts signed bodies; keeps one bounded keep-alive pool per (endpoint, name, address).

    ``ssl_context`` replaces the system's trust store (tests give a private CA); None verifies
    against the system's. ``resolver`` answers for the endpoints' names (the system's unless
    given: tests give a DNS server of their own); the connection goes to an address it
    answered and vetted, never to the name."""

    def __init__(
        self, policy: Policy, ssl_context: ssl.SSLContext | None = None, resolver: Resolver = SYSTEM
    ) -> None:
        self.policy = policy
        self._ssl: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
        self._resolver = resolver
        self._clients: dict[PoolKey, aiohttp.ClientSession] = {}
        self._used: dict[PoolKey, float] = {}

    def _client(self, key: PoolKey) -> aiohttp.ClientSession:
        now = time.monotonic()
        client = self._clients.get(key)
        if client is None:
            self._close_idle(now)
            client = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=self.policy.per_endpoint,
                    limit_per_host=self.policy.per_endpoint,
                    keepalive_timeout=KEEPALIVE_S,
                ),
                timeout=aiohttp.ClientTimeout(total=self.policy.timeout_s),
                cookie_jar=aiohttp.DummyCookieJar(),  # a receiver's cookies are never sent back
                auto_decompress=False,
                trust_env=False,
            )
            self._clients[key] = client
        self._used[key] = now
        return client

    def _close_idle(self, now: float) -> None:
        for key, used in list(self._used.items()):
            if now - used > IDLE_CLIENT_S:
                client = self._clients.pop(key)
                del self._used[key]
                asyncio.get_running_loop().create_task(client.close())

    @property
    def pools(self) -> int:
        return len(self._clients)

    async def close(self) -> None:
        clients = list(self._clients.values())
        self._clients.clear()
        self._used.clear()
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)

    async def post(self, url: str, body: bytes, headers: dict[str, str], endpoint: str = "") -> Outcome:
        """One POST, its outcome. ``endpoint`` (the webhook id) keys the connection pool:
        endpoints never share connections, so endpoints on one host (several tenants behind
        one relay service, say) do not wait for each other's slow answers."""
        started = time.monotonic()
        status: int | None = None
        location: str | None = None
        error: str | None = None
        try:
            async with asyncio.timeout(self.policy.timeout_s):
                target = await vet(url, self.policy.allow_private, self._resolver)  # again: rebinding
                status, location = await self._post_retrying(endpoint, target, body, headers)
        except TargetError as exc:
            error = exc.reason
        except aiohttp.ClientSSLError as exc:
            error = f"tls_failed: {exc}"[:500]
        except CONNECT_FAILURES as exc:
            error = f"connect_failed: {exc}"[:500]
        except aiohttp.ClientError as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
        except TimeoutError:
            error = f"timeout after {self.policy.timeout_s:g}s"
        except Exception as exc:  # noqa: BLE001 - an outcome, never a crash: the attempt is recorded
            error = f"{type(exc).__name__}"
        if status is not None and not 200 <= status < 300:
            error = _status_error(status, location)
        return Outcome(status, error, int((time.monotonic() - started) * 1000))

    async def _post_retrying(
        self, endpoint: str, target: Target, body: bytes, headers: dict[str, str]
    ) -> tuple[int, str | None]:
        # Only failures to connect are retried: the receiver has not seen the request.
        retrying = AsyncRetrying(
            stop=stop_after_attempt(CONNECT_TRIES),
            wait=wait_exponential(multiplier=0.2, max=2.0),
            retry=RETRY_CONNECT,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._post_any(endpoint, target, body, headers)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _post_any(
        self, endpoint: str, target: Target, body: bytes, headers: dict[str, str]
    ) -> tuple[int, str | None]:
        for i, address in enumerate(target.addresses):
            try:
                return await self._post_to(endpoint, target, address, body, headers)
            except CONNECT_FAILURES:
                if i == len(target.addresses) - 1:
                    raise
        raise aiohttp.ClientConnectionError("no address to connect to")

    async def _post_to(
        self, endpoint: str, target: Target, address: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, str | None]:
        """The status and, for a redirect, its ``Location`` (reported, never followed: the
        place it names was not vetted)."""
        url = URL(target.url).with_host(address)
        all_headers = {
            **headers,
            "Host": target.host_header,
            "Content-Type": "application/json",
            "User-Agent": "Sluice-Webhooks/1.0",
        }
        https = target.scheme == "https"
        client = self._client((endpoint, target.scheme, target.host.lower(), target.port, address))
        async with client.post(
            url,
            data=body,
            headers=all_headers,
            allow_redirects=False,
            ssl=self._ssl if https else False,
            server_hostname=target.host if https else None,
        ) as resp:
            # The body is read (and dropped) up to MAX_BODY so the connection goes back to the
            # pool; past that it is not read and the connection is closed instead.
            read = 0
            async for chunk in resp.content.iter_any():
                read += len(chunk)
                if read > MAX_BODY:
                    resp.close()
                    break
            return resp.status, resp.headers.get("Location")


def _status_error(status: int, location: str | None) -> str:
    """What an operator reads for an answer that is not a 2xx: a redirect is a failed attempt,
    retried on the schedule like any other (docs/security.md, "Webhook targets: what is
    checked when"), and says where it pointed so the endpoint's owner can fix the URL."""
    if 300 <= status < 400:
        where = "" if location is None else f" to {location!r}"
        return f"http_{status}: redirect{where} not followed"[:500]
    return f"http_{status}"
