"""What a command produces (its result and its events) and the small helpers every decision
shares: amounts parsed as decimals, money formatted for partners, ``not_found`` naming its
field. Pure: the shell's handlers and the core's decisions both build these."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from common.contracts.base import Ctx, Event
from common.errors import ErrorCode, ServiceError, invalid
from common.ids import new_id
from common.money import MAX_AMOUNT
from common.times import iso


class Effects:
    """What a command produced: its result and the events to emit."""

    def __init__(self, status: int, data: Any) -> None:
        self.status = status
        self.data = data
        self.events: list[Event] = []

    def emit(
        self, kind: Callable[..., Event], ctx: Ctx, created_at: str | None = None, **fields: Any
    ) -> None:
        """Add an event of ``kind`` for the command's tenant, mode and request: a fresh id,
        stamped now unless ``created_at`` says when it happened."""
        stamp = {
            "event_id": new_id("evt"),
            "created_at": created_at or now_iso(),
            "request_id": ctx.request_id,
        }
        self.events.append(kind(tenant_id=ctx.tenant_id, mode=ctx.mode, **stamp, **fields))


def now_iso() -> str:
    return iso(datetime.now(UTC))


def parse_amount(value: str | None, places: int, field: str) -> Decimal:
    """A decimal string > 0 with at most ``places`` decimals and at most 1e12; never a float."""
    if value is None:
        raise invalid(field, "amount is required")
    try:
        amount = Decimal(value.strip())
    except (InvalidOperation, AttributeError):
        raise invalid(field, "amount must be a decimal string") from None
    if not amount.is_finite() or amount <= 0:
        raise invalid(field, "amount must be greater than zero")
    if amount > MAX_AMOUNT:
        raise invalid(field, "amount must be at most 1000000000000")
    exponent = amount.as_tuple().exponent  # an int: the amount is finite
    if isinstance(exponent, int) and -exponent > places:
        raise invalid(field, f"amount has more than {places} decimal places")
    return amount


def money(value: Decimal) -> str:
    """Decimal text with at least two and at most six decimals: ``100.00``, ``0.123456``."""
    text = format(value.quantize(Decimal("0.000001")), "f").rstrip("0")
    whole, _, frac = text.partition(".")
    return f"{whole}.{frac.ljust(2, '0')}"


def missing(what: str, field: str) -> ServiceError:
    """``not_found`` naming the field: the id is unknown to this tenant and mode."""
    return ServiceError(ErrorCode.NOT_FOUND, f"{what} not found", details={"field": field})
