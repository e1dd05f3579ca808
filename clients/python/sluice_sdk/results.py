"""What the gateway said about a successful answer, beside its data: the request id
(``X-Request-Id``, quote it to support) and whether the answer is a replay of an earlier one
with the same idempotency key (``X-Idempotent-Replay: true``: the operation was done once,
before; this call changed nothing).

    customer = sluice.customers.create(...)
    info = response_of(customer)
    info.request_id, info.replayed, info.status

Every result a resource method returns, and every page, carries it. A result is the answer's
JSON as a ``dict`` (typed by ``sluice_sdk.schemas``), so the response rides on a ``dict``
subclass that is equal to, and serialises as, the plain dict. The TypeScript SDK has the same
function, ``responseOf``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ResponseInfo:
    request_id: str | None
    replayed: bool
    status: int

    @classmethod
    def of(cls, status: int, headers: Mapping[str, str]) -> ResponseInfo:
        lower = {k.lower(): v for k, v in headers.items()}
        replayed = lower.get("x-idempotent-replay", "").strip().lower() == "true"
        return cls(request_id=lower.get("x-request-id"), replayed=replayed, status=status)


class Answered(dict[str, Any]):
    """A result as the gateway answered it: the plain dict, and the response it came in."""

    __slots__ = ("sluice_response",)
    sluice_response: ResponseInfo


def answered(data: Any, info: ResponseInfo) -> Any:
    """``data`` (a JSON object) carrying ``info``; anything else unchanged."""
    if isinstance(data, Answered):
        data.sluice_response = info
        return data
    if isinstance(data, dict):
        result = Answered(data)
        result.sluice_response = info
        return result
    return data


def response_of(result: object) -> ResponseInfo:
    """The request id, replay flag and status of a result or page this SDK returned."""
    info = getattr(result, "sluice_response", None)
    if not isinstance(info, ResponseInfo):
        raise TypeError(
            f"response_of() takes a result or page returned by a Sluice method, not {type(result).__name__}"
        )
    return info
