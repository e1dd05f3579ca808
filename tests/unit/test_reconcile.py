"""reconcile (docs/operations/backups.md, "How to check a restore") against fake audit queries:
the totals per currency and their difference, each row check's offenders in the answer, the
limit, the gauges. The queries against real books, and books broken by SQL:
tests/inprocess/test_reconcile.py."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from prometheus_client import REGISTRY

from common.contracts.base import Ctx
from common.contracts.commands import Reconcile
from common.errors import ServiceError
from ledger import reconcile
from ledger.config import LedgerConfig

pytestmark = pytest.mark.unit
D = Decimal
SESSION = object()

BALANCED = {
    "USDC": {
        "journal_total": D("100"),
        "balances_total": D("90"),
        "holds_total": D("8"),
        "fee_total": D("2"),
    },
    "EURC": {"journal_total": D("5.5"), "balances_total": D("5.5"), "holds_total": D(0), "fee_total": D(0)},
}


class FakeAudit:
    """What each audit query returns, and the arguments it was asked with."""

    def __init__(self) -> None:
        self.totals: dict[str, dict[str, Decimal]] = BALANCED
        self.accounts: list[Any] = []
        self.entries: list[Any] = []
        self.transfers: list[Any] = []
        self.histories: list[Any] = []
        self.asked: list[tuple[Any, ...]] = []

    def query(self, name: str, rows: str) -> Any:
        async def run(session: Any, *args: Any) -> Any:
            assert session is SESSION
            self.asked.append((name, *args))
            return getattr(self, rows)

        return run


@pytest.fixture
def audit(monkeypatch: pytest.MonkeyPatch) -> FakeAudit:
    fake = FakeAudit()
    for name, rows in (
        ("currency_totals", "totals"),
        ("unequal_accounts", "accounts"),
        ("unbalanced_entries", "entries"),
        ("mismatched_transfers", "transfers"),
        ("broken_histories", "histories"),
    ):
        monkeypatch.setattr(reconcile.audit, name, fake.query(name, rows))
    return fake


async def run(limit: int = 100, tenant: str = "ten_1") -> dict[str, Any]:
    cmd = Reconcile(command_id="cmd_1", ctx=Ctx(request_id="r", tenant_id=tenant, mode="live"), limit=limit)
    effects = await reconcile.reconcile(SESSION, cmd, LedgerConfig())  # type: ignore[arg-type]
    assert effects.status == 200 and effects.events == []
    return dict(effects.data)


def gauge(name: str) -> float | None:
    return REGISTRY.get_sample_value(name)


async def test_books_that_add_up_are_ok(audit: FakeAudit) -> None:
    assert await run() == {
        "ok": True,
        "tenant_id": "ten_1",
        "mode": "live",
        "currencies": [
            {
                "currency": "USDC",
                "journal_total": "100.00",
                "balances_total": "90.00",
                "holds_total": "8.00",
                "fee_total": "2.00",
                "difference": "0.00",
            },
            {
                "currency": "EURC",
                "journal_total": "5.50",
                "balances_total": "5.50",
                "holds_total": "0.00",
                "fee_total": "0.00",
                "difference": "0.00",
            },
        ],
        "discrepancies": [],
    }
    assert [a[:3] for a in audit.asked] == [
        ("currency_totals", "ten_1", "live"),
        ("unequal_accounts", "ten_1", "live"),
        ("unbalanced_entries", "ten_1", "live"),
        ("mismatched_transfers", "ten_1", "live"),
        ("broken_histories", "ten_1", "live"),
    ]
    assert (gauge("sluice_reconcile_ok"), gauge("sluice_reconcile_discrepancies")) == (1, 0)


@pytest.mark.parametrize(("asked", "used"), [(100, 100), (0, 1), (-5, 1), (1000, 1000), (5000, 1000)])
async def test_the_limit_per_check_is_between_1_and_1000(audit: FakeAudit, asked: int, used: int) -> None:
    await run(limit=asked)
    assert {a[-1] for a in audit.asked[1:]} == {used}


async def test_a_tenant_is_required(audit: FakeAudit) -> None:
    with pytest.raises(ServiceError) as err:
        await run(tenant="")
    assert (err.value.code, err.value.message) == ("invalid_request", "reconcile names one tenant")
    assert err.value.details == {"field": "tenant_id"}
    assert audit.asked == []


async def test_missing_money_and_every_offending_row_are_listed(
    audit: FakeAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reconcile.time, "time", lambda: 1234.5)
    audit.totals = {
        "USDC": {
            "journal_total": D("100"),
            "balances_total": D("90"),
            "holds_total": D("8"),
            "fee_total": D("0"),
        },
        "EURC": {
            "journal_total": D("1"),
            "balances_total": D("1.25"),
            "holds_total": D(0),
            "fee_total": D(0),
        },
    }
    audit.accounts = [("wal_1.available", "wal_1", "USDC", "10.5", "10")]
    audit.entries = [("je_1", "USDC", D("0.01")), ("je_2", "EURC", None)]
    audit.transfers = [("tr_1", "completed", "7", D("-7"), D("0.5")), ("tr_3", "failed", "1", None, None)]
    audit.histories = [("tr_2", "failed", "pending", 2)]
    found = await run()
    assert found["ok"] is False
    assert [c["difference"] for c in found["currencies"]] == ["2.00", "-0.25"]
    assert found["discrepancies"] == [
        {"check": "currency_totals", "currency": "USDC", "difference": "2.00"},
        {"check": "currency_totals", "currency": "EURC", "difference": "-0.25"},
        {
            "check": "balance_equals_postings",
            "wallet_id": "wal_1",
            "account_id": "wal_1.available",
            "currency": "USDC",
            "balance": "10.50",
            "postings_total": "10.00",
        },
        {"check": "entry_balances", "entry_id": "je_1", "currency": "USDC", "total": "0.01"},
        {"check": "entry_balances", "entry_id": "je_2", "currency": "EURC", "total": "0.00"},
        {
            "check": "transfer_matches_state",
            "transfer_id": "tr_1",
            "state": "completed",
            "amount": "7.00",
            "held": "-7.00",
            "available_change": "0.50",
        },
        {
            "check": "transfer_matches_state",
            "transfer_id": "tr_3",
            "state": "failed",
            "amount": "1.00",
            "held": "0.00",
            "available_change": "0.00",
        },
        {
            "check": "transfer_history",
            "transfer_id": "tr_2",
            "state": "failed",
            "last_recorded_state": "pending",
            "changes_out_of_sequence": 2,
        },
    ]
    assert gauge("sluice_reconcile_ok") == 0
    assert gauge("sluice_reconcile_discrepancies") == 8
    assert gauge("sluice_reconcile_last_run_timestamp_seconds") == 1234.5
