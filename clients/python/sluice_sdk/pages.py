"""One page of a list, as every ``list_page`` method answers it (``sluice_sdk.resources``).

A list answers ``{"items": [...], "next_cursor": ...}``, newest first; ``limit`` is the page
size everywhere (1 to 100, the gateway's default 10). A :class:`Page` holds one answer:

    page = sluice.transfers.list_page(limit=10)
    for transfer in page.data: ...          # this page only
    if page.has_more:
        page = page.next_page()             # or list_page(limit=10, starting_after=page.next_cursor)
    for transfer in page.auto_paging_iter(): ...  # this page and every one after it

``list(...)`` is the same walk from the first page (or from ``starting_after``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["AsyncPage", "Page", "page_fields"]


def page_fields(answer: Any) -> tuple[list[Any], bool, str | None]:
    """(items, has_more, next_cursor) of a list's answer. ``has_more`` is the answer's own when
    it has one, else whether it handed out a cursor (the gateway's lists end with a null one)."""
    body: Mapping[str, Any] = answer if isinstance(answer, Mapping) else {}
    items = list(body.get("items") or [])
    cursor = body.get("next_cursor") or None
    has_more = bool(body["has_more"]) if "has_more" in body else cursor is not None
    return items, has_more, str(cursor) if cursor is not None else None


@dataclass
class Page(Generic[T]):
    """One page: ``data`` (up to ``limit`` items, in the list's order), ``has_more``, and
    ``next_cursor`` (the next page's ``starting_after``; None on the last page)."""

    data: list[T]
    has_more: bool
    next_cursor: str | None
    _fetch: Callable[[str], Page[T]] = field(repr=False, compare=False)

    def next_page(self) -> Page[T] | None:
        """The page after this one (one request, the same query and limit), or None."""
        if not self.has_more or self.next_cursor is None:
            return None
        return self._fetch(self.next_cursor)

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

    async def next_page(self) -> AsyncPage[T] | None:
        if not self.has_more or self.next_cursor is None:
            return None
        return await self._fetch(self.next_cursor)

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
