"""One page of a list, as every ``list_page`` method answers it (``sluice_sdk.resources``).

A list answers ``{"items": [...], "next_cursor": ...}``, newest first; ``limit`` is the page
size everywhere (1 to 100, the gateway's default 10). A :class:`Page` holds one answer:

    page = sluice.transfers.list_page(limit=10)
    for transfer in page.data: ...          # this page only
    if page.has_more:
        page = page.next_page()             # or list_page(limit=10, starting_after=page.next_cursor)
    for transfer in page.auto_paging_iter(): ...  # this page and every one after it

``list(...)`` is the same walk from the first page (or from ``starting_after``).

A list that pages both ways (the events: ``ending_before``, ``order``) also answers
``has_more`` itself; its pages have ``previous_cursor`` and ``previous_page()``:

    page = sluice.events.list_page(limit=10, ending_before="evt_...")  # the 10 just before it
    older = page.previous_page()            # None when nothing lies before this page
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sluice_sdk.results import ResponseInfo

T = TypeVar("T")

__all__ = ["AsyncPage", "Page", "page_fields", "pages_both_ways", "previous_cursor"]


def page_fields(answer: Any) -> tuple[list[Any], bool, str | None]:
    """(items, has_more, next_cursor) of a list's answer. ``has_more`` is the answer's own when
    it has one, else whether it handed out a cursor (the gateway's lists end with a null one)."""
    body: Mapping[str, Any] = answer if isinstance(answer, Mapping) else {}
    items = list(body.get("items") or [])
    cursor = body.get("next_cursor") or None
    has_more = bool(body["has_more"]) if "has_more" in body else cursor is not None
    return items, has_more, str(cursor) if cursor is not None else None


def pages_both_ways(answer: Any) -> bool:
    """Whether the list answers ``has_more`` itself: those lists take ``ending_before``."""
    return isinstance(answer, Mapping) and "has_more" in answer


def previous_cursor(items: list[Any], has_more: bool, query: Mapping[str, Any]) -> str | None:
    """The ``ending_before`` of the page before one (its first item's id), or None when nothing
    can lie before it: the first page, or a page read backward (``ending_before``) with no more.
    Only for a list that pages both ways (:func:`pages_both_ways`)."""
    first = items[0] if items else None
    first_id = first.get("id") if isinstance(first, Mapping) else None
    backward = query.get("ending_before") is not None
    may_precede = has_more if backward else query.get("starting_after") is not None
    return first_id if isinstance(first_id, str) and may_precede else None


@dataclass
class Page(Generic[T]):
    """One page: ``data`` (up to ``limit`` items, in the list's order), ``has_more`` (more
    beyond it in the direction it was read), ``next_cursor`` (the next page's
    ``starting_after``; None on the last page) and, for a list that pages both ways,
    ``previous_cursor`` (the previous page's ``ending_before``; None on the first page)."""

    data: list[T]
    has_more: bool
    next_cursor: str | None
    _fetch: Callable[[str], Page[T]] = field(repr=False, compare=False)
    previous_cursor: str | None = None
    _fetch_before: Callable[[str], Page[T]] | None = field(default=None, repr=False, compare=False)
    _read_backward: bool = field(default=False, repr=False, compare=False)
    # the answer this page came in: response_of(page) (sluice_sdk.results)
    sluice_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    def next_page(self) -> Page[T] | None:
        """The page after this one (one request, the same query and limit), or None."""
        if not (self.has_more or self._read_backward) or self.next_cursor is None:
            return None
        return self._fetch(self.next_cursor)

    def previous_page(self) -> Page[T] | None:
        """The page before this one (``ending_before`` its first item), or None: the first page,
        or a list that pages one way only."""
        if self.previous_cursor is None or self._fetch_before is None:
            return None
        return self._fetch_before(self.previous_cursor)

    def auto_paging_iter(self) -> Iterator[T]:
        """Every item of this page, then of each page after it."""
        page: Page[T] | None = self
        while page is not None:
            yield from page.data
            page = page.next_page()

    def __iter__(self) -> Iterator[T]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


@dataclass
class AsyncPage(Generic[T]):
    """:class:`Page` for ``AsyncSluice``: ``await page.next_page()``,
    ``async for item in page.auto_paging_iter()``."""

    data: list[T]
    has_more: bool
    next_cursor: str | None
    _fetch: Callable[[str], Awaitable[AsyncPage[T]]] = field(repr=False, compare=False)
    previous_cursor: str | None = None
    _fetch_before: Callable[[str], Awaitable[AsyncPage[T]]] | None = field(
        default=None, repr=False, compare=False
    )
    _read_backward: bool = field(default=False, repr=False, compare=False)
    # the answer this page came in: response_of(page) (sluice_sdk.results)
    sluice_response: ResponseInfo | None = field(default=None, repr=False, compare=False)

    async def next_page(self) -> AsyncPage[T] | None:
        if not (self.has_more or self._read_backward) or self.next_cursor is None:
            return None
        return await self._fetch(self.next_cursor)

    async def previous_page(self) -> AsyncPage[T] | None:
        if self.previous_cursor is None or self._fetch_before is None:
            return None
        return await self._fetch_before(self.previous_cursor)

    async def auto_paging_iter(self) -> AsyncIterator[T]:
        page: AsyncPage[T] | None = self
        while page is not None:
            for item in page.data:
                yield item
            page = await page.next_page()

    def __iter__(self) -> Iterator[T]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)
