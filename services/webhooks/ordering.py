"""How a page of the events API is read and answered (pure: ``service.list_events`` runs it).

Events are listed by ``sequence`` (``repository.sequences``), newest first or, with
``order="asc"``, oldest first. A page starts just after ``starting_after`` and reads on in the
list's order, or ends just before ``ending_before``: then it is read the other way from that
cursor (the ``limit`` events nearest it) and turned round, so the items always come in the
list's order. ``has_more`` says whether more lie beyond the page in the direction it was read
(Stripe's rule); ``next_cursor`` is what to pass as ``starting_after`` for the page after it
(null when nothing follows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from common.errors import invalid

ORDERS = ("desc", "asc")


@dataclass(frozen=True, slots=True)
class Walk:
    """How to read one page: by sequence ``descending`` or not, from the event ``cursor`` (its
    query field in ``field``), ``backward`` when the page ends before the cursor."""

    descending: bool
    cursor: str | None
    field: str
    backward: bool


def walk_of(order: str, starting_after: str | None, ending_before: str | None) -> Walk:
    """The walk a query asks for; a 400 on an unknown order or on both cursors at once."""
    if order not in ORDERS:
        raise invalid(
            "order", "order must be desc (newest first) or asc (oldest first)", reason="unknown_order"
        )
    if starting_after is not None and ending_before is not None:
        raise invalid(
            "ending_before", "give starting_after or ending_before, not both", reason="conflicting_cursors"
        )
    backward = ending_before is not None
    return Walk(
        descending=(order == "desc") != backward,
        cursor=ending_before if backward else starting_after,
        field="ending_before" if backward else "starting_after",
        backward=backward,
    )


def event_page(
    rows: Sequence[Any], limit: int, walk: Walk, view: Callable[[Any], dict[str, Any]]
) -> dict[str, Any]:
    """The answer for ``rows`` (up to ``limit + 1``, in the walk's order; each has ``event_id``):
    ``{items, has_more, next_cursor}``, items in the list's order."""
    shown = list(rows[:limit])
    has_more = len(rows) > limit
    if walk.backward:
        shown.reverse()
        # The cursor's own event, at least, follows this page.
        next_cursor = shown[-1].event_id if shown else None
    else:
        next_cursor = shown[-1].event_id if has_more and shown else None
    return {"items": [view(r) for r in shown], "has_more": has_more, "next_cursor": next_cursor}
