"""The thin layer over the generated calls (``sluice_api``): one idempotency key per logical
operation, reused on every retry; bounded retries that honour ``Retry-After``; the adaptive
throttle; typed errors; page iterators.

    from sluice_api.api.customers import post_v1_customers
    sluice = Sluice(Config.from_env())
    customer = sluice.call(post_v1_customers.sync_detailed, body=CustomerCreate(...)).data

``call`` takes any generated ``sync_detailed`` (``AsyncSluice.call``: ``asyncio_detailed``)
and its arguments without ``client``; it returns the parsed success envelope or raises a
:class:`~sluice_sdk.errors.SluiceError`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import random
import time
import typing
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar, cast

import httpx

from sluice_api.client import AuthenticatedClient
from sluice_api.models.error_envelope import ErrorEnvelope
from sluice_api.types import UNSET
from sluice_sdk._version import __version__
from sluice_sdk.config import GATEWAY_MODE, Config
from sluice_sdk.errors import ConnectionFailed, SluiceError, Throttled, error_from_answer
from sluice_sdk.retry import AdaptiveThrottle, Attempts, Stats

T = TypeVar("T")
S = TypeVar("S")
T_co = TypeVar("T_co", covariant=True)


class Answer(Protocol[T_co]):
    """What a generated ``*_detailed`` call returns (``sluice_api.types.Response``)."""

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def content(self) -> bytes: ...
    @property
    def parsed(self) -> T_co | None: ...


class Page(Protocol[T_co]):
    @property
    def items(self) -> Sequence[T_co]: ...
    @property
    def next_cursor(self) -> str | None: ...


class Listing(Protocol[T_co]):
    @property
    def data(self) -> Page[T_co]: ...


def new_key() -> str:
    """A fresh idempotency key: one per logical operation (a transfer body carries it)."""
    return "sdk_" + uuid.uuid4().hex


@functools.lru_cache(maxsize=512)
def _takes_key(op: Callable[..., Any]) -> bool:
    return "idempotency_key" in inspect.signature(op).parameters


@functools.lru_cache(maxsize=512)
def _body_type(op: Callable[..., Any]) -> Any:
    return typing.get_type_hints(op).get("body")


def with_body(op: Callable[..., Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """A body given as a plain mapping becomes the operation's generated model
    (``Model.from_dict``), so ``body={"email": ...}`` and ``body=CustomerCreate(...)`` are the
    same call."""
    body = kwargs.get("body")
    if isinstance(body, Mapping):
        model = _body_type(op)
        if model is None or not hasattr(model, "from_dict"):
            raise TypeError(f"{op.__module__} takes no JSON body model")
        return {**kwargs, "body": model.from_dict(dict(body))}
    return kwargs


def with_key(op: Callable[..., Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with the operation's idempotency key: the body's ``idempotency_key`` when it
    has one (transfers, payouts), else the caller's ``idempotency_key``, else a new one, for
    every operation that takes a key. Chosen once, before the first attempt."""
    if not _takes_key(op):
        return kwargs
    given = kwargs.get("idempotency_key")
    body_key = getattr(kwargs.get("body"), "idempotency_key", None)
    if isinstance(body_key, str) and body_key:
        if isinstance(given, str) and given != body_key:
            raise ValueError("idempotency_key differs from the body's idempotency_key")
        return {**kwargs, "idempotency_key": body_key}
    if isinstance(given, str) and given:
        return kwargs
    return {**kwargs, "idempotency_key": new_key()}


def outcome(answer: Answer[Any]) -> tuple[Any, SluiceError | None]:
    """(parsed success, None) for a 2xx answer, else (None, its typed error)."""
    status = int(answer.status_code)
    if 200 <= status < 300 and answer.parsed is not None and not isinstance(answer.parsed, ErrorEnvelope):
        return answer.parsed, None
    return None, error_from_answer(status, answer.headers, answer.content)


def _transport_error(exc: httpx.TransportError) -> ConnectionFailed:
    return ConnectionFailed(f"{type(exc).__name__}: {exc}")


# The last answer this thread or task received: when a generated parser cannot read an answer
# (a proxy's HTML 503, say), the error is built from the raw answer instead.
_seen: ContextVar[httpx.Response | None] = ContextVar("sluice_sdk_seen", default=None)
_UNPARSEABLE = (ValueError, KeyError, TypeError)


def _see(response: httpx.Response) -> None:
    _seen.set(response)


async def _see_async(response: httpx.Response) -> None:
    _seen.set(response)


def _unparsed(exc: Exception) -> SluiceError:
    raw = _seen.get()
    if raw is None:
        raise exc
    return error_from_answer(raw.status_code, raw.headers, raw.content)


class _Base:
    def __init__(
        self,
        config: Config,
        *,
        throttle: AdaptiveThrottle | None = None,
        rng: random.Random | None = None,
        on_retry: Callable[[SluiceError, int, float], None] | None = None,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.config = config
        self.throttle = throttle or AdaptiveThrottle()
        self.stats = Stats()
        self.rng = rng or random.Random()  # retry jitter, not a secret  # nosec B311
        self.on_retry = on_retry
        self.api = AuthenticatedClient(
            base_url=config.base_url,
            token=config.api_key,
            timeout=httpx.Timeout(config.timeout_s),
            headers={
                "x-service-mode": GATEWAY_MODE[config.mode],
                "User-Agent": f"sluice-sdk-python/{__version__}",
            },
            httpx_args={
                "event_hooks": {"response": [self._hook]},
                **({"transport": transport} if transport is not None else {}),
            },
        )

    _hook: Callable[[httpx.Response], Any] = staticmethod(_see)

    def _attempts(self) -> Attempts:
        return Attempts(self.config.retry, self.throttle, self.stats, self.rng, self.on_retry)


class Sluice(_Base):
    """A synchronous client; safe to share between threads (one throttle, one pool)."""

    def call(self, op: Callable[..., Answer[ErrorEnvelope | S]], /, **kwargs: Any) -> S:
        kwargs = with_key(op, with_body(op, kwargs))
        attempts = self._attempts()
        while True:
            try:
                attempts.start()
                try:
                    _seen.set(None)
                    answer = op(client=self.api, **kwargs)
                except httpx.TransportError as exc:
                    failure: SluiceError | None = _transport_error(exc)
                except _UNPARSEABLE as exc:
                    parsed, failure = None, _unparsed(exc)
                else:
                    parsed, failure = outcome(answer)
                attempts.finish(failure)
                if failure is None:
                    return cast(S, parsed)
            except Throttled as throttled:  # refused by the throttle before sending
                failure = throttled
            delay = attempts.wait_s(failure)
            if delay is None:
                raise failure
            time.sleep(delay)

    def pages(self, op: Callable[..., Answer[ErrorEnvelope | Listing[T]]], /, **kwargs: Any) -> Iterator[T]:
        """Every item of a list endpoint, page after page (``next_cursor`` as
        ``starting_after``); each page is one :meth:`call`."""
        cursor = kwargs.pop("starting_after", UNSET)
        while True:
            page = self.call(op, starting_after=cursor, **kwargs).data
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def close(self) -> None:
        self.api.get_httpx_client().close()

    def __enter__(self) -> Sluice:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncSluice(_Base):
    """The asyncio client: the same rules, with ``asyncio_detailed`` calls."""

    _hook = staticmethod(_see_async)

    async def call(self, op: Callable[..., Awaitable[Answer[ErrorEnvelope | S]]], /, **kwargs: Any) -> S:
        kwargs = with_key(op, with_body(op, kwargs))
        attempts = self._attempts()
        while True:
            try:
                attempts.start()
                try:
                    _seen.set(None)
                    answer = await op(client=self.api, **kwargs)
                except httpx.TransportError as exc:
                    failure: SluiceError | None = _transport_error(exc)
                except _UNPARSEABLE as exc:
                    parsed, failure = None, _unparsed(exc)
                else:
                    parsed, failure = outcome(answer)
                attempts.finish(failure)
                if failure is None:
                    return cast(S, parsed)
            except Throttled as throttled:
                failure = throttled
            delay = attempts.wait_s(failure)
            if delay is None:
                raise failure
            await asyncio.sleep(delay)

    async def pages(
        self, op: Callable[..., Awaitable[Answer[ErrorEnvelope | Listing[T]]]], /, **kwargs: Any
    ) -> AsyncIterator[T]:
        cursor = kwargs.pop("starting_after", UNSET)
        while True:
            page = (await self.call(op, starting_after=cursor, **kwargs)).data
            for item in page.items:
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def aclose(self) -> None:
        await self.api.get_async_httpx_client().aclose()

    async def __aenter__(self) -> AsyncSluice:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
