"""The clients: :class:`Sluice` and :class:`AsyncSluice`, whose resources
(``sluice.customers.create(...)``, generated in ``sluice_sdk.resources``) send every operation
through ``sluice_sdk.core`` (one idempotency key per operation, retries, deadline, throttle,
typed errors, lenient success).

Lower level, for the generated calls themselves (``sluice_api``)::

    customer = sluice.call(post_v1_customers.sync_detailed, body=CustomerCreate(...)).data

``call`` takes any generated ``sync_detailed`` (``AsyncSluice.call``: ``asyncio_detailed``)
and its arguments without ``client``, with the same keys and retries; it returns the parsed
success envelope (a 2xx the model cannot read: :class:`Lenient`) or raises a
:class:`~sluice_sdk.errors.SluiceError`. Calling a generated function directly bypasses all of
this: do not.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import time
import typing
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

import httpx

from sluice_api.models.error_envelope import ErrorEnvelope
from sluice_api.types import UNSET
from sluice_sdk.core import AsyncCore, SyncCore, new_key, seen
from sluice_sdk.errors import ConnectionFailed, SluiceError, Throttled, connection_failed, error_from_answer
from sluice_sdk.resources import AsyncResources, Resources

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
        cases = [m for m in typing.get_args(model) if hasattr(m, "from_dict")]
        if cases:  # a union body (a customer: one model per account_type)
            return {**kwargs, "body": _one_of(cases, body)}
        if model is None or not hasattr(model, "from_dict"):
            raise TypeError(f"{op.__module__} takes no JSON body model")
        return {**kwargs, "body": model.from_dict(dict(body))}
    return kwargs


@dataclass(frozen=True)
class _AsSent:
    """A body no case of a union reads, sent as given: the gateway refuses it naming the field."""

    body: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.body)


def _one_of(cases: Sequence[Any], body: Mapping[str, Any]) -> Any:
    """The first case of a union whose model reads ``body`` (each checks its own tag)."""
    for case in cases:
        try:
            return case.from_dict(dict(body))
        except (KeyError, ValueError, TypeError):
            continue
    return _AsSent(body)


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
    if 200 <= status < 300:  # never an error: a 2xx the model did not read is returned as it is
        if answer.parsed is not None and not isinstance(answer.parsed, ErrorEnvelope):
            return answer.parsed, None
        return _lenient_body(answer.content), None
    return None, error_from_answer(status, answer.headers, answer.content)


def _lenient_body(content: bytes) -> Any:
    try:
        body = json.loads(content)
    except ValueError:
        body = {}
    return _lenient(body if isinstance(body, Mapping) else {"data": body})


def _transport_error(exc: httpx.TransportError) -> ConnectionFailed:
    return connection_failed(exc)


_UNPARSEABLE = (ValueError, KeyError, TypeError)


class Lenient:
    """A 2xx answer the generated model could not read (a field or an enum value newer than
    this SDK): the operation succeeded, so its JSON is returned, read by attribute as the model
    would be (``created.data.transfer_id``); unknown values are kept as they came."""

    def __init__(self, value: Mapping[str, Any]) -> None:
        self._value = dict(value)

    def __getattr__(self, name: str) -> Any:
        try:
            item = self._value[name]
        except KeyError:
            raise AttributeError(name) from None
        return _lenient(item)

    def to_dict(self) -> dict[str, Any]:
        return dict(self._value)

    def __repr__(self) -> str:
        return f"Lenient({self._value!r})"


def _lenient(value: Any) -> Any:
    if isinstance(value, Mapping):
        return Lenient(value)
    if isinstance(value, list):
        return [_lenient(v) for v in value]
    return value


def _unparsed(exc: Exception) -> tuple[Any, SluiceError | None]:
    """The outcome of an answer the generated parser could not read: a 2xx is the operation's
    success (:class:`Lenient`), never an error; anything else its typed error."""
    raw = seen.get()
    if raw is None:
        raise exc
    if 200 <= raw.status_code < 300:
        return _lenient_body(raw.content), None
    return None, error_from_answer(raw.status_code, raw.headers, raw.content)


class Sluice(SyncCore, Resources):
    """A synchronous client; safe to share between threads (one throttle, one pool).

    Resources: ``sluice.customers.create(...)``, ``.retrieve(id)``, ``.list()`` (every page),
    ``.list_page()`` (one page, ``sluice_sdk.pages``), one method per operation
    (``sluice_sdk.resources``). ``call`` is the lower level: a
    generated ``sync_detailed`` and its arguments, with the same keys and retries."""

    def call(self, op: Callable[..., Answer[ErrorEnvelope | S]], /, **kwargs: Any) -> S:
        kwargs = with_key(op, with_body(op, kwargs))
        attempts = self._attempts()
        while True:
            try:
                attempts.start()
                try:
                    seen.set(None)
                    answer = op(client=self.api, **kwargs)
                except httpx.TransportError as exc:
                    failure: SluiceError | None = _transport_error(exc)
                except _UNPARSEABLE as exc:
                    parsed, failure = _unparsed(exc)
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


class AsyncSluice(AsyncCore, AsyncResources):
    """The asyncio client: the same resources and rules (``await sluice.customers.create(...)``,
    ``async for c in sluice.customers.list()``); ``call`` takes ``asyncio_detailed``."""

    async def call(self, op: Callable[..., Awaitable[Answer[ErrorEnvelope | S]]], /, **kwargs: Any) -> S:
        kwargs = with_key(op, with_body(op, kwargs))
        attempts = self._attempts()
        while True:
            try:
                attempts.start()
                try:
                    seen.set(None)
                    answer = await op(client=self.api, **kwargs)
                except httpx.TransportError as exc:
                    failure: SluiceError | None = _transport_error(exc)
                except _UNPARSEABLE as exc:
                    parsed, failure = _unparsed(exc)
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
