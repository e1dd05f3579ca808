"""One logical operation, sent the right way: what every resource method
(``sluice_sdk.resources``) calls.

- One idempotency key per operation that writes (every POST), chosen before the first attempt
  and sent on every retry; transfers and payouts also carry it in the body.
- Bounded retries (:class:`~sluice_sdk.retry.RetryPolicy`, ``max_attempts`` per call) of what is
  safe to repeat: connection failures, 429, 500, 502, 503, 504; ``Retry-After`` honoured (an
  HTTP date too), and raised when it asks more than 60 s (the error carries it).
- An overall deadline per call (``options={"timeout": s}``): no attempt or wait goes past it.
- Cancellation: the asyncio client waits with ``asyncio.sleep``, so a cancelled task stops
  during a back-off too.
- Lenient success: a 2xx is never an error. The answer's ``data`` is returned as the JSON
  it is, typed by ``sluice_sdk.schemas``: a field or an enum value this SDK does not know is
  kept, not refused.
- Hooks (``on_request``, ``on_response``) and debug logging (logger ``sluice_sdk``: method,
  path, attempt, status, request id, never a credential).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Literal, TypeVar

import httpx

from sluice_api.client import AuthenticatedClient
from sluice_sdk._version import __version__
from sluice_sdk.config import Config
from sluice_sdk.errors import DeadlineExceeded, SluiceError, Throttled, connection_failed, error_from_answer
from sluice_sdk.options import RequestOptions
from sluice_sdk.pages import AsyncPage, Page, page_fields, pages_both_ways, previous_cursor
from sluice_sdk.results import ResponseInfo, answered
from sluice_sdk.retry import AdaptiveThrottle, Attempts, RetryPolicy, Stats

log = logging.getLogger("sluice_sdk")
# The last answer this thread or task received: when a generated parser cannot read an answer
# (``Sluice.call``), the outcome is read from the raw answer instead.
seen: ContextVar[httpx.Response | None] = ContextVar("sluice_sdk_seen", default=None)


def _see(response: httpx.Response) -> None:
    seen.set(response)


async def _see_async(response: httpx.Response) -> None:
    seen.set(response)


KEY_FIELD = "idempotency_key"


def new_key() -> str:
    """A fresh idempotency key: one per logical operation."""
    import uuid

    return "sdk_" + uuid.uuid4().hex


def _json_default(value: object) -> str:
    if isinstance(value, Decimal):
        return str(value)  # money and rates travel as decimal strings
    raise TypeError(f"{type(value).__name__} is not JSON")


@dataclass(frozen=True)
class Prepared:
    """An operation ready to send: the same bytes and key on every attempt."""

    method: str
    path: str
    content: bytes | None
    query: dict[str, Any]
    headers: dict[str, str]
    policy: RetryPolicy
    deadline: float | None  # time.monotonic() seconds

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()


def prepare(
    config: Config,
    method: str,
    path: str,
    body: Mapping[str, Any] | None,
    query: Mapping[str, Any] | None,
    options: RequestOptions | None,
    headers: Mapping[str, str] | None = None,
    key_in_body: bool = False,
) -> Prepared:
    opts: RequestOptions = options or {}
    sent: dict[str, str] = dict(headers or {})
    payload = dict(body) if body is not None else None
    if method != "GET":
        given = opts.get("idempotency_key")
        in_body = payload.get(KEY_FIELD) if payload is not None and key_in_body else None
        if given and in_body and given != in_body:
            raise ValueError("options idempotency_key differs from the body's idempotency_key")
        key = given or in_body or new_key()
        sent["Idempotency-Key"] = str(key)
        if key_in_body and payload is not None:
            payload[KEY_FIELD] = key
    policy = config.retry
    if "max_attempts" in opts:
        policy = replace(policy, max_attempts=opts["max_attempts"])
    timeout = opts.get("timeout")
    if timeout is not None and timeout <= 0:
        raise ValueError("timeout must be > 0 seconds")
    content = None
    if payload is not None:
        content = json.dumps(payload, default=_json_default).encode()
        sent["Content-Type"] = "application/json"
    return Prepared(
        method=method,
        path=path,
        content=content,
        query={k: v for k, v in (query or {}).items() if v is not None},
        headers=sent,
        policy=policy,
        deadline=None if timeout is None else time.monotonic() + timeout,
    )


def success(response: httpx.Response) -> Any:
    """The ``data`` of a 2xx answer as the JSON it is; never an error (an unreadable body is
    logged and returned as ``{}``: the operation succeeded)."""
    try:
        body = response.json()
    except ValueError:
        log.warning("sluice: a %s answer whose body is not JSON", response.status_code)
        return {}
    info = ResponseInfo.of(response.status_code, response.headers)
    if isinstance(body, dict) and "data" in body:
        return answered(body["data"], info)
    return answered(body, info)


P = TypeVar("P", Page[Any], AsyncPage[Any])


def _with_response(page: P, answer: Any) -> P:
    """``page`` carrying the response of the answer it was read from (sluice_sdk.results)."""
    page.sluice_response = getattr(answer, "sluice_response", None)
    return page


def _check_config(client: str, config: object) -> None:
    """A clear TypeError, naming the fix, for a client built from something not a Config (the
    common slip: the key itself, ``Sluice("sk_test_...")``)."""
    if isinstance(config, Config):
        return
    if isinstance(config, str):
        raise TypeError(
            f"{client}() takes a Config, not the key itself: "
            f'{client}(Config(api_key="sk_test_...")), or {client}(Config.from_env())'
        )
    raise TypeError(
        f"{client}() takes a sluice_sdk.Config, not {type(config).__name__}: "
        f'{client}(Config(api_key="sk_test_..."))'
    )


class CoreBase:
    """What the sync and asyncio clients share: configuration, throttle, statistics, the
    generated client (whose httpx pool the resources use too), hooks."""

    def __init__(
        self,
        config: Config,
        *,
        throttle: AdaptiveThrottle | Literal[False] | None = None,
        rng: random.Random | None = None,
        on_retry: Callable[[SluiceError, int, float], None] | None = None,
        on_request: Callable[[httpx.Request], None] | None = None,
        on_response: Callable[[httpx.Response], None] | None = None,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
    ) -> None:
        _check_config(type(self).__name__, config)
        self.config = config
        off = throttle is False or not config.throttle
        self.throttle: AdaptiveThrottle | None = None if off else (throttle or AdaptiveThrottle())
        self.stats = Stats()
        self.rng = rng or random.Random()  # retry jitter, not a secret  # nosec B311
        self.on_retry = on_retry
        hooks = self._hooks(on_request, on_response)
        self.api = AuthenticatedClient(
            base_url=config.url,
            token=config.api_key,
            timeout=httpx.Timeout(config.timeout_s),
            headers={"x-service-mode": config.gateway_mode, "User-Agent": f"sluice-sdk-python/{__version__}"},
            httpx_args={"event_hooks": hooks, **({"transport": transport} if transport is not None else {})},
        )

    def _hooks(
        self,
        on_request: Callable[[httpx.Request], None] | None,
        on_response: Callable[[httpx.Response], None] | None,
    ) -> dict[str, list[Callable[..., Any]]]:
        raise NotImplementedError

    def _attempts(self, policy: RetryPolicy | None = None) -> Attempts:
        return Attempts(policy or self.config.retry, self.throttle, self.stats, self.rng, self.on_retry)

    @staticmethod
    def _wait(call: Prepared, failure: SluiceError, attempts: Attempts) -> float:
        """Seconds before the next attempt, or raise: ``failure`` when it is final,
        :class:`DeadlineExceeded` when the wait would pass the deadline."""
        delay = attempts.wait_s(failure)
        if delay is None:
            raise failure
        left = call.remaining()
        if left is not None and delay >= left:
            raise DeadlineExceeded(
                f"the deadline passes before the next attempt ({attempts.attempt} made): {failure}"
            ) from failure
        return delay

    @staticmethod
    def _attempt_timeout(call: Prepared, per_attempt: float, last: SluiceError | None) -> float:
        left = call.remaining()
        if left is None:
            return per_attempt
        if left <= 0:
            raise DeadlineExceeded("the deadline passed") from last
        return min(per_attempt, left)

    @staticmethod
    def _answer(call: Prepared, attempt: int, response: httpx.Response) -> SluiceError | None:
        log.debug(
            "sluice %s %s attempt %d: %d request_id=%s",
            call.method,
            call.path,
            attempt,
            response.status_code,
            response.headers.get("x-request-id"),
        )
        if 200 <= response.status_code < 300:
            return None
        return error_from_answer(response.status_code, response.headers, response.content)

    @staticmethod
    def _unreached(call: Prepared, attempt: int, exc: httpx.TransportError) -> SluiceError:
        log.debug("sluice %s %s attempt %d: %s", call.method, call.path, attempt, type(exc).__name__)
        left = call.remaining()
        if left is not None and left <= 0:
            return DeadlineExceeded(f"the deadline passed during attempt {attempt}: {type(exc).__name__}")
        return connection_failed(exc)


class SyncCore(CoreBase):
    def _hooks(
        self,
        on_request: Callable[[httpx.Request], None] | None,
        on_response: Callable[[httpx.Response], None] | None,
    ) -> dict[str, list[Callable[..., Any]]]:
        return {
            "request": [on_request] if on_request else [],
            "response": [_see, *([on_response] if on_response else [])],
        }

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        options: RequestOptions | None = None,
        headers: Mapping[str, str] | None = None,
        key_in_body: bool = False,
    ) -> Any:
        """Send one operation; its answer's ``data``, or a :class:`SluiceError`."""
        call = prepare(self.config, method, path, body, query, options, headers, key_in_body)
        attempts = self._attempts(call.policy)
        http = self.api.get_httpx_client()
        last: SluiceError | None = None
        while True:
            try:
                attempts.start()
            except Throttled as throttled:
                failure: SluiceError = throttled
            else:
                timeout = self._attempt_timeout(call, self.config.timeout_s, last)
                try:
                    response = http.request(
                        call.method,
                        call.path,
                        content=call.content,
                        params=call.query,
                        headers=call.headers,
                        timeout=timeout,
                    )
                except httpx.TransportError as exc:
                    failure = self._unreached(call, attempts.attempt, exc)
                    if isinstance(failure, DeadlineExceeded):
                        raise failure from exc
                else:
                    answered = self._answer(call, attempts.attempt, response)
                    if answered is None:
                        attempts.finish(None)
                        return success(response)
                    failure = answered
                attempts.finish(failure)
            last = failure
            time.sleep(self._wait(call, failure, attempts))

    def page(self, path: str, query: Mapping[str, Any], options: RequestOptions | None = None) -> Page[Any]:
        """One page of a list (one request; ``query`` as given); its ``next_page`` asks for the
        page after it with the same query, ``next_cursor`` as ``starting_after``, and, when the
        list pages both ways, its ``previous_page`` the page before, ``ending_before``."""
        answer = self.request("GET", path, query=query, options=options)
        items, has_more, cursor = page_fields(answer)

        def after(starting_after: str) -> Page[Any]:
            return self.page(
                path, {**query, "starting_after": starting_after, "ending_before": None}, options
            )

        if not pages_both_ways(answer):
            return _with_response(Page(items, has_more, cursor, after), answer)

        def before(ending_before: str) -> Page[Any]:
            return self.page(path, {**query, "starting_after": None, "ending_before": ending_before}, options)

        previous = previous_cursor(items, has_more, query)
        backward = query.get("ending_before") is not None
        return _with_response(Page(items, has_more, cursor, after, previous, before, backward), answer)

    def paginate(
        self, path: str, query: Mapping[str, Any], options: RequestOptions | None = None
    ) -> Iterator[Any]:
        """Every item of a list, page after page (``next_cursor`` as ``starting_after``), from
        the first page or from ``query``'s ``starting_after``; nothing is sent before the first
        item is asked for."""
        yield from self.page(path, query, options).auto_paging_iter()


class AsyncCore(CoreBase):
    def _hooks(
        self,
        on_request: Callable[[httpx.Request], None] | None,
        on_response: Callable[[httpx.Response], None] | None,
    ) -> dict[str, list[Callable[..., Any]]]:
        def later(hook: Callable[[Any], None]) -> Callable[[Any], Awaitable[None]]:
            async def run(value: Any) -> None:
                hook(value)

            return run

        return {
            "request": [later(on_request)] if on_request else [],
            "response": [_see_async, *([later(on_response)] if on_response else [])],
        }

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        options: RequestOptions | None = None,
        headers: Mapping[str, str] | None = None,
        key_in_body: bool = False,
    ) -> Any:
        """As :meth:`SyncCore.request`; cancelling the task stops it, in a back-off too."""
        call = prepare(self.config, method, path, body, query, options, headers, key_in_body)
        attempts = self._attempts(call.policy)
        http = self.api.get_async_httpx_client()
        last: SluiceError | None = None
        while True:
            try:
                attempts.start()
            except Throttled as throttled:
                failure: SluiceError = throttled
            else:
                timeout = self._attempt_timeout(call, self.config.timeout_s, last)
                try:
                    response = await http.request(
                        call.method,
                        call.path,
                        content=call.content,
                        params=call.query,
                        headers=call.headers,
                        timeout=timeout,
                    )
                except httpx.TransportError as exc:
                    failure = self._unreached(call, attempts.attempt, exc)
                    if isinstance(failure, DeadlineExceeded):
                        raise failure from exc
                else:
                    answered = self._answer(call, attempts.attempt, response)
                    if answered is None:
                        attempts.finish(None)
                        return success(response)
                    failure = answered
                attempts.finish(failure)
            last = failure
            await asyncio.sleep(self._wait(call, failure, attempts))

    async def page(
        self, path: str, query: Mapping[str, Any], options: RequestOptions | None = None
    ) -> AsyncPage[Any]:
        """As :meth:`SyncCore.page`."""
        answer = await self.request("GET", path, query=query, options=options)
        items, has_more, cursor = page_fields(answer)

        async def after(starting_after: str) -> AsyncPage[Any]:
            next_query = {**query, "starting_after": starting_after, "ending_before": None}
            return await self.page(path, next_query, options)

        if not pages_both_ways(answer):
            return _with_response(AsyncPage(items, has_more, cursor, after), answer)

        async def before(ending_before: str) -> AsyncPage[Any]:
            previous_query = {**query, "starting_after": None, "ending_before": ending_before}
            return await self.page(path, previous_query, options)

        previous = previous_cursor(items, has_more, query)
        backward = query.get("ending_before") is not None
        return _with_response(AsyncPage(items, has_more, cursor, after, previous, before, backward), answer)

    async def paginate(
        self, path: str, query: Mapping[str, Any], options: RequestOptions | None = None
    ) -> AsyncIterator[Any]:
        first = await self.page(path, query, options)
        async for item in first.auto_paging_iter():
            yield item
