"""The events API's pages (services/webhooks/ordering.py): which way a page is read, and what it
answers, in both orders and from both cursors. Pure: no database, no broker."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from common.errors import ServiceError
from tests.support.replay import check_sequences, replay
from webhooks.ordering import event_page, walk_of

pytestmark = pytest.mark.unit

# Ten events numbered 1..10, as the repository would read them beyond a cursor.
EVENTS = [SimpleNamespace(event_id=f"evt_{n:02d}", sequence=n) for n in range(1, 11)]


def read(
    order: str, starting_after: str | None = None, ending_before: str | None = None, limit: int = 3
) -> Any:
    """What list_events answers over EVENTS: the walk, the rows the repository returns for it
    (limit + 1 beyond the cursor's number), and the page made of them."""
    walk = walk_of(order, starting_after, ending_before)
    beyond = None if walk.cursor is None else int(walk.cursor[4:])
    rows = sorted(EVENTS, key=lambda e: e.sequence, reverse=walk.descending)
    if beyond is not None:
        rows = [e for e in rows if (e.sequence < beyond if walk.descending else e.sequence > beyond)]
    return event_page(rows[: limit + 1], limit, walk, lambda r: {"id": r.event_id, "sequence": r.sequence})


def numbers(answer: Any) -> list[int]:
    return [item["sequence"] for item in answer["items"]]


def test_newest_first_by_default_and_oldest_first_with_asc() -> None:
    assert numbers(read("desc")) == [10, 9, 8]
    assert numbers(read("asc")) == [1, 2, 3]
    assert read("desc")["has_more"] and read("desc")["next_cursor"] == "evt_08"


def test_starting_after_reads_on_in_the_lists_order_and_the_last_page_says_so() -> None:
    assert numbers(read("desc", starting_after="evt_08")) == [7, 6, 5]
    assert numbers(read("asc", starting_after="evt_03")) == [4, 5, 6]
    last = read("asc", starting_after="evt_08")
    assert numbers(last) == [9, 10] and not last["has_more"] and last["next_cursor"] is None


def test_ending_before_is_the_page_just_before_the_cursor_still_in_the_lists_order() -> None:
    """Broken when the backward page comes out reversed, or is the far end of the list instead
    of the events nearest the cursor."""
    newest = read("desc", ending_before="evt_05")
    assert numbers(newest) == [8, 7, 6] and newest["has_more"]  # 9 and 10 lie before it
    assert newest["next_cursor"] == "evt_06"  # starting_after it: the cursor's own event next
    assert numbers(read("desc", starting_after=newest["next_cursor"])) == [5, 4, 3]
    oldest = read("asc", ending_before="evt_05")
    assert numbers(oldest) == [2, 3, 4] and oldest["has_more"]  # 1 lies before it
    first = read("asc", ending_before="evt_03")
    assert numbers(first) == [1, 2] and not first["has_more"]


def test_paging_every_way_visits_each_event_once_and_desc_is_asc_reversed() -> None:
    def walk_all(order: str) -> list[int]:
        seen, cursor = [], None
        while True:
            answer = read(order, starting_after=cursor)
            seen += numbers(answer)
            cursor = answer["next_cursor"]
            if cursor is None:
                return seen

    def walk_back(order: str, start: str) -> list[int]:
        seen, cursor = [], start
        while True:
            answer = read(order, ending_before=cursor)
            seen = numbers(answer) + seen
            if not answer["has_more"]:
                return seen
            cursor = answer["items"][0]["id"]

    assert walk_all("asc") == list(range(1, 11))
    assert walk_all("desc") == list(range(10, 0, -1))
    assert walk_back("asc", "evt_10") == list(range(1, 10))
    assert walk_back("desc", "evt_01") == list(range(10, 1, -1))


@pytest.mark.parametrize(
    ("order", "starting_after", "ending_before", "field", "reason"),
    [
        ("newest", None, None, "order", "unknown_order"),
        ("asc", "evt_01", "evt_02", "ending_before", "conflicting_cursors"),
    ],
)
def test_a_query_the_list_cannot_answer_is_refused_by_name(
    order: str, starting_after: str | None, ending_before: str | None, field: str, reason: str
) -> None:
    with pytest.raises(ServiceError) as caught:
        walk_of(order, starting_after, ending_before)
    assert caught.value.details["field"] == field and caught.value.details["reason"] == reason


def _transfer(kind: str, state: str, previous: str | None = None, n: int = 0) -> dict[str, Any]:
    data = {"transfer_id": "tr_1", "state": state, **({"previous_state": previous} if previous else {})}
    return {"id": f"evt_{n}", "sequence": n, "type": f"transfer.{kind}", "data": data}


def test_the_partners_replay_follows_the_state_machine_and_refuses_what_does_not() -> None:
    """The integration test's replay (tests/support/replay.py) must fail on the orders the
    events API used to give: an update before its creation, or a step back."""
    path = [
        _transfer("created", "pending", n=1),
        _transfer("updated", "processing", "pending", n=2),
        _transfer("updated", "completed", "processing", n=3),
    ]
    assert replay(path) == {"tr_1": "completed"} and check_sequences(path) == [1, 2, 3]
    assert replay([_transfer("created", "completed", n=1)]) == {"tr_1": "completed"}  # a book transfer
    for broken in (path[::-1], [path[0], path[2], path[1]], [path[0], path[0]]):
        with pytest.raises(AssertionError):
            replay(broken)
    with pytest.raises(AssertionError):
        check_sequences([path[1], path[0]])


def test_the_repository_keeps_the_events_table_under_its_name() -> None:
    """A submodule of ``webhooks.repository`` named ``events`` replaced the package's ``events``
    table when imported, and the retention sweep crashed on ``events.c``."""
    from webhooks import models
    from webhooks import repository as repo

    assert repo.events is models.events
