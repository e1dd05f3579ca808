"""compliance.screening under mutation: what an operator's screening entry must
be, what it answers, and how the list pages. The repository is an in-memory fake of its three
statements (the SQL itself: tests/inprocess/test_withdrawals.py, which screens an address
and sees a transfer to it refused)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from common.contracts.base import Ctx
from common.contracts.commands import AddScreenedAddress, ListScreenedAddresses, RemoveScreenedAddress
from common.errors import ServiceError
from compliance import repository, screening

pytestmark = pytest.mark.unit

EVM = "0x52908400098527886E0F7030069857D2E4169EE7"  # EIP-55 mixed case, valid
SOL = "So11111111111111111111111111111111111111112"
WHEN = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
CTX = Ctx(request_id="req_1", tenant_id="ten_1", mode="sandbox", actor="ann")


class Screened:
    """The screened_addresses table: (chain, address) -> row, listed in key order."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], SimpleNamespace] = {}
        self.session = object()
        self.listed: list[tuple[int, tuple[str, str] | None]] = []

    async def add(self, session: Any, chain: str, address: str, reason: str, actor: str | None) -> Any:
        assert session is self.session
        row = SimpleNamespace(chain=chain, address=address, reason=reason, added_by=actor, created_at=WHEN)
        self.rows[(chain, address)] = row
        return row

    async def remove(self, session: Any, chain: str, address: str) -> bool:
        assert session is self.session
        return self.rows.pop((chain, address), None) is not None

    async def list(self, session: Any, limit: int, after: tuple[str, str] | None) -> list[Any]:
        assert session is self.session
        self.listed.append((limit, after))
        return [self.rows[k] for k in sorted(self.rows) if after is None or k > after][:limit]


class Snap:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def screen(self, chain: str, address: str) -> None:
        self.calls.append(("screen", chain, address))

    def unscreen(self, chain: str, address: str) -> None:
        self.calls.append(("unscreen", chain, address))


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> Screened:
    t = Screened()
    monkeypatch.setattr(repository, "add_screened", t.add)
    monkeypatch.setattr(repository, "remove_screened", t.remove)
    monkeypatch.setattr(repository, "list_screened", t.list)
    return t


def add_cmd(chain: str, address: str, reason: str = "sanctions list") -> AddScreenedAddress:
    return AddScreenedAddress(command_id="c", ctx=CTX, chain=chain, address=address, reason=reason)


async def refusal(call: Any) -> tuple[str, dict[str, Any], str]:
    with pytest.raises(ServiceError) as info:
        await call
    return str(info.value.code), info.value.details, info.value.message


async def test_an_entry_is_kept_in_the_form_screening_compares(table: Screened) -> None:
    snap = Snap()
    view = await screening.add(table.session, snap, add_cmd(" eth ", EVM, "  sanctions list "))  # type: ignore[arg-type]
    assert view == {
        "chain": "ETH",
        "address": EVM.lower(),
        "reason": "sanctions list",
        "added_by": "ann",
        "created_at": "2026-11-26T12:00:00Z",
    }
    assert snap.calls == [("screen", "ETH", EVM.lower())]
    await screening.add(table.session, snap, add_cmd("sol", SOL))  # type: ignore[arg-type]
    assert snap.calls[-1] == ("screen", "SOL", SOL)  # base58 keeps its case


async def test_a_bad_entry_is_refused_by_field(table: Screened) -> None:
    snap = Snap()
    chains = "chain must be one of ARBITRUM, BASE, BSC, ETH, OPTIMISM, POLYGON, SOL, TRON"
    assert await refusal(screening.add(table.session, snap, add_cmd("btc", EVM))) == (  # type: ignore[arg-type]
        "invalid_request",
        {"field": "chain"},
        chains,
    )
    assert await refusal(screening.add(table.session, snap, add_cmd("ETH", SOL))) == (  # type: ignore[arg-type]
        "invalid_request",
        {"field": "address"},
        "an EVM address is 0x followed by 40 hexadecimal digits",
    )
    for reason in ("", "   ", "x" * 201):
        assert await refusal(screening.add(table.session, snap, add_cmd("ETH", EVM, reason))) == (  # type: ignore[arg-type]
            "invalid_request",
            {"field": "reason"},
            "reason is 1 to 200 characters",
        )
    assert snap.calls == [] and table.rows == {}
    await screening.add(table.session, snap, add_cmd("ETH", EVM, "x" * 200))  # type: ignore[arg-type]
    assert table.rows[("ETH", EVM.lower())].reason == "x" * 200


async def test_removing_an_entry_answers_it_and_unscreens_it(table: Screened) -> None:
    snap = Snap()
    await screening.add(table.session, snap, add_cmd("ETH", EVM))  # type: ignore[arg-type]
    remove = RemoveScreenedAddress(command_id="c", ctx=CTX, chain="eth", address=EVM)
    assert await screening.remove(table.session, snap, remove) == {  # type: ignore[arg-type]
        "chain": "ETH",
        "address": EVM.lower(),
        "removed": True,
    }
    assert snap.calls[-1] == ("unscreen", "ETH", EVM.lower())
    assert await refusal(screening.remove(table.session, snap, remove)) == (  # type: ignore[arg-type]
        "not_found",
        {},
        "screened address not found",
    )
    assert snap.calls[-1][0] == "unscreen" and len(snap.calls) == 2
    bad = RemoveScreenedAddress(command_id="c", ctx=CTX, chain="DOGE", address=EVM)
    assert (await refusal(screening.remove(table.session, snap, bad)))[1] == {"field": "chain"}  # type: ignore[arg-type]


def page(limit: int = 50, starting_after: str | None = None) -> ListScreenedAddresses:
    return ListScreenedAddresses(command_id="c", ctx=CTX, limit=limit, starting_after=starting_after)


async def test_the_list_pages_by_chain_and_address(table: Screened) -> None:
    snap = Snap()
    addresses = [f"0x{n:040x}" for n in range(1, 4)]
    for address in addresses:
        await screening.add(table.session, snap, add_cmd("ETH", address))  # type: ignore[arg-type]
    first = await screening.listed(table.session, snap, page(2))  # type: ignore[arg-type]
    assert [i["address"] for i in first["items"]] == addresses[:2]
    assert first["next_cursor"] == f"ETH:{addresses[1]}"
    rest = await screening.listed(table.session, snap, page(2, first["next_cursor"]))  # type: ignore[arg-type]
    assert [i["address"] for i in rest["items"]] == addresses[2:]
    assert rest["next_cursor"] is None
    exact = await screening.listed(table.session, snap, page(3))  # type: ignore[arg-type]
    assert len(exact["items"]) == 3 and exact["next_cursor"] is None
    assert exact["items"][0] == {
        "chain": "ETH",
        "address": addresses[0],
        "reason": "sanctions list",
        "added_by": "ann",
        "created_at": "2026-11-26T12:00:00Z",
    }
    one = await screening.listed(table.session, snap, page(1))  # type: ignore[arg-type]
    assert len(one["items"]) == 1 and one["next_cursor"] == f"ETH:{addresses[0]}"
    full = await screening.listed(table.session, snap, page(100))  # type: ignore[arg-type]
    assert len(full["items"]) == 3
    # one row past the page is read, no more: it says whether there is a next page
    assert [limit for limit, _ in table.listed] == [3, 3, 4, 2, 101]
    assert table.listed[1][1] == ("ETH", addresses[1])
    # a cursor's address is everything after the chain and its colon
    await screening.listed(table.session, snap, page(2, "ETH:0xab:cd"))  # type: ignore[arg-type]
    assert table.listed[-1] == (3, ("ETH", "0xab:cd"))


async def test_a_page_outside_its_bounds_or_a_foreign_cursor_is_refused(table: Screened) -> None:
    for limit in (0, 101):
        assert await refusal(screening.listed(table.session, Snap(), page(limit))) == (  # type: ignore[arg-type]
            "invalid_request",
            {"field": "limit"},
            "limit must be between 1 and 100",
        )
    assert await refusal(screening.listed(table.session, Snap(), page(10, "nocolon"))) == (  # type: ignore[arg-type]
        "invalid_request",
        {"field": "starting_after"},
        "not a cursor returned by list_screened_addresses",
    )
