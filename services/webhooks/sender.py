"""The only network code of webhooks: posting a signed body to a vetted address.

Connections are kept alive and pooled per ``(scheme, host name, port, address)``: one httpx
client per key, each bounded to ``Policy.per_endpoint`` connections. The request goes to the
vetted IP address with the name in ``Host`` and TLS SNI, so a pooled connection carries one
name only and is never reused for another name served by the same address. Clients unused
for ``IDLE_CLIENT_S`` are closed.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

import httpx
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from common.settings import Settings
from webhooks.targets import Target, TargetError, vet

CONNECT_TRIES = 3
IDLE_CLIENT_S = 60.0
KEEPALIVE_S = 30.0
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
    per_endpoint: int = 16  # deliveries in flight (and connections) per endpoint
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


PoolKey = tuple[str, str, int, str]  # scheme, host name, port, vetted address


class Sender:
    """Posts signed bodies; keeps one bounded keep-alive pool per (name, address)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._clients: dict[PoolKey, httpx.AsyncClient] = {}
        self._used: dict[PoolKey, float] = {}

    def _client(self, key: PoolKey) -> httpx.AsyncClient:
        now = time.monotonic()
        client = self._clients.get(key)
        if client is None:
            self._close_idle(now)
            client = httpx.AsyncClient(
                timeout=self.policy.timeout_s,
                follow_redirects=False,
                trust_env=False,
                limits=httpx.Limits(
                    max_connections=self.policy.per_endpoint,
                    max_keepalive_connections=self.policy.per_endpoint,
                    keepalive_expiry=KEEPALIVE_S,
                ),
            )
            self._clients[key] = client
        self._used[key] = now
        return client

    def _close_idle(self, now: float) -> None:
        for key, used in list(self._used.items()):
            if now - used > IDLE_CLIENT_S:
                client = self._clients.pop(key)
                del self._used[key]
                asyncio.get_running_loop().create_task(client.aclose())

    @property
    def pools(self) -> int:
        return len(self._clients)

    async def close(self) -> None:
        clients = list(self._clients.values())
        self._clients.clear()
        self._used.clear()
        await asyncio.gather(*(c.aclose() for c in clients), return_exceptions=True)

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Outcome:
        started = time.monotonic()
        status: int | None = None
        error: str | None = None
        try:
            async with asyncio.timeout(self.policy.timeout_s):
                target = await vet(url, self.policy.allow_private)  # again, against rebinding
                status = await self._post_retrying(target, body, headers)
        except TargetError as exc:
            error = exc.reason
        except TimeoutError:
            error = f"timeout after {self.policy.timeout_s:g}s"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
        except Exception as exc:  # noqa: BLE001 - an outcome, never a crash: the attempt is recorded
            error = f"{type(exc).__name__}"
        if status is not None and not 200 <= status < 300:
            error = f"http_{status}"
        return Outcome(status, error, int((time.monotonic() - started) * 1000))

    async def _post_retrying(self, target: Target, body: bytes, headers: dict[str, str]) -> int:
        # Only failures to connect are retried: the receiver has not seen the request.
        retrying = AsyncRetrying(
            stop=stop_after_attempt(CONNECT_TRIES),
            wait=wait_exponential(multiplier=0.2, max=2.0),
            retry=retry_if_exception_type((httpx.ConnectError, httpx.ConnectTimeout)),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._post_any(target, body, headers)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _post_any(self, target: Target, body: bytes, headers: dict[str, str]) -> int:
        for i, address in enumerate(target.addresses):
            try:
                return await self._post_to(target, address, body, headers)
            except (httpx.ConnectError, httpx.ConnectTimeout):
                if i == len(target.addresses) - 1:
                    raise
        raise httpx.ConnectError("no address to connect to")

    async def _post_to(self, target: Target, address: str, body: bytes, headers: dict[str, str]) -> int:
        url = httpx.URL(target.url).copy_with(host=address)
        extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
        all_headers = {
            **headers,
            "Host": target.host_header,
            "Content-Type": "application/json",
            "User-Agent": "Sluice-Webhooks/1.0",
        }
        client = self._client((target.scheme, target.host.lower(), target.port, address))
        async with client.stream(
            "POST", url, content=body, headers=all_headers, extensions=extensions
        ) as resp:
            # The body is read (and dropped) up to MAX_BODY so the connection goes back to the
            # pool; past that it is not read and the connection is closed instead.
            read = 0
            async for chunk in resp.aiter_raw():
                read += len(chunk)
                if read > MAX_BODY:
                    break
            return resp.status_code
