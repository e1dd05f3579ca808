"""A transfer id names one command (docs/security.md, "Transfer ids, live and replies"): the pure
decisions of compliance and the ledger, with no broker and no database.

On the tree before, compliance decided a second command reusing a completed transfer's id (its
hold was not written: ``ON CONFLICT DO NOTHING``), the ledger failed it on the transfers' primary
key and gave back the allowance of that id, which was the completed transfer's: a daily cap of
30 let 49.97 move. Here each step refuses or gives back nothing. The same attack on the stack:
tests/integration/test_authority_round2.py.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import msgspec
import pytest

from common import authority
from common.authority import RELEASE_SIGNERS, SigningKey, VerifyKeys
from common.contracts.base import Ctx
from common.contracts.commands import CreateTransfer, ReleaseAllowance
from common.errors import ErrorCode, Reason, ServiceError
from common.topics import Topics
from compliance import rules, service
from compliance.allowance import Claim, holds_of
from ledger.core.transfers import plan_transfers, transfer_id_reused
from ledger.service import allowance_release
from tests.unit.test_ledger_core import NOW, SETTLE_S, WALLETS, book, refusal, stored

pytestmark = pytest.mark.unit

KEYS = authority.new_settings("ids")
LEDGER = SigningKey.parse(KEYS["SLUICE_LEDGER_SIGNING_KEY"], "ledger")
VERIFY = VerifyKeys.parse(KEYS["SLUICE_AUTHORITY_VERIFY_KEYS"])
D = Decimal


def _transfer(command_id: str, transfer_id: str, tenant: str = "ten_1") -> CreateTransfer:
    cmd = book(transfer_id, "wal_a", "wal_b", "1", f"key-{command_id}")
    ctx = Ctx(request_id="req", tenant_id=tenant, mode="production")
    return msgspec.structs.replace(cmd, command_id=command_id, ctx=ctx)


def test_compliance_refuses_a_transfer_id_another_command_holds() -> None:
    holders: dict[str, str | None] = {"tr_done": "cmd_first"}
    found = service.refused_early(_transfer("cmd_second", "tr_done"), set(), holders)
    assert found is not None
    verdict, inputs = found
    assert verdict.refused
    assert verdict.reason == Reason.TRANSFER_ID_REUSED and verdict.code == ErrorCode.FORBIDDEN
    assert inputs == {"transfer_id": "tr_done"}
    assert holders == {"tr_done": "cmd_first"}  # the refused command takes nothing


def test_the_same_command_retried_is_not_a_reuse_and_a_new_id_is_taken_for_the_batch() -> None:
    holders: dict[str, str | None] = {"tr_done": "cmd_first"}
    assert service.refused_early(_transfer("cmd_first", "tr_done"), set(), holders) is None
    assert service.refused_early(_transfer("cmd_new", "tr_new"), set(), holders) is None
    assert holders["tr_new"] == "cmd_new"
    # a second command of the same batch naming it is refused
    later = service.refused_early(_transfer("cmd_twin", "tr_new"), set(), holders)
    assert later is not None and later[0].reason == Reason.TRANSFER_ID_REUSED


def test_a_hold_from_before_commands_were_recorded_still_holds_its_id() -> None:
    found = service.refused_early(_transfer("cmd_any", "tr_legacy"), set(), {"tr_legacy": None})
    assert found is not None and found[0].reason == Reason.TRANSFER_ID_REUSED


def test_a_disabled_tenant_is_refused_after_the_id_check() -> None:
    holders: dict[str, str | None] = {}
    found = service.refused_early(_transfer("cmd_1", "tr_1", tenant="ten_off"), {"ten_off"}, holders)
    assert found is not None and found[0].reason == "tenant_disabled"
    assert holders == {"tr_1": "cmd_1"}  # its decision holds the id: a reuse is still refused


def test_a_decision_records_its_transfer_id_unless_it_refused_the_id() -> None:
    cmd = _transfer("cmd_1", "tr_1")
    sign = lambda c: c  # noqa: E731 - no signature needed to read the row
    topics = Topics("sluice")
    _, row = service._record(cmd, rules.transfer_id_reused(), {}, topics, sign)  # noqa: SLF001
    assert row["transfer_id"] is None
    _, row = service._record(cmd, rules.Verdict("allow", "transfer_policy"), {}, topics, sign)  # noqa: SLF001
    assert row["transfer_id"] == "tr_1"
    _, row = service._record(cmd, rules.tenant_disabled(), {}, topics, sign)  # noqa: SLF001
    assert row["transfer_id"] == "tr_1"


def test_a_hold_is_the_decision_of_the_command_that_took_it() -> None:
    """A granted claim's hold goes on its own command's decision (keyed by command id: the
    decision names the transfer and the command); a refused claim holds nothing."""
    claims = [
        Claim("cmd_1", "tr_1", "ten_1", "production", "USDC", date(2026, 1, 1), D(10), D(30)),
        Claim("cmd_2", "tr_2", "ten_1", "production", "USDC", date(2026, 1, 1), D(25), D(30)),
    ]
    assert holds_of(claims, {"cmd_2": D(10)}) == {
        "cmd_1": {"hold_currency": "USDC", "hold_day": date(2026, 1, 1), "hold_amount": D(10)}
    }


def test_a_release_names_the_failed_command() -> None:
    ctx = Ctx(request_id="r", tenant_id="ten_1", mode="sandbox")
    release = allowance_release(book("tr_1", "wal_a", "wal_b", "1", "key-1"), Topics("sluice"), LEDGER)
    assert release is not None
    decoded = msgspec.json.decode(release.payload, type=ReleaseAllowance)
    assert decoded.failed_command_id == "cmd_tr_1" and decoded.transfer_id == "tr_1"
    assert VERIFY.verify(decoded, RELEASE_SIGNERS) == "ledger"  # compliance believes it
    forged = ReleaseAllowance(command_id="anything", ctx=ctx, transfer_id="tr_1")
    assert forged.failed_command_id == ""  # names no command: matches no hold


def test_the_ledger_refuses_a_recorded_transfer_id_under_another_key() -> None:
    cmds = [
        book("tr_old", "wal_a", "wal_b", "1", "key-new"),  # tr_old is recorded: refused
        book("tr_3", "wal_a", "wal_b", "1", "key-old"),  # tr_old's key: its replay, whatever the id
        book("tr_4", "wal_a", "wal_b", "1", "key-4"),
        book("tr_4", "wal_a", "wal_b", "1", "key-5"),  # tr_4 planned above under another key
    ]
    prepared = plan_transfers(
        cmds, [stored(amount=D(1), source_wallet_id="wal_a")], WALLETS, SETTLE_S, NOW, {"tr_old"}
    )
    assert isinstance(prepared[0], ServiceError) and refusal(prepared[0]) == (
        "forbidden",
        "transfer_id_reused",
    )
    assert type(prepared[1]).__name__ == "Effects" and prepared[1].data["transfer_id"] == "tr_old"  # type: ignore[union-attr]
    assert type(prepared[2]).__name__ == "Planned"
    assert isinstance(prepared[3], ServiceError) and refusal(prepared[3]) == (
        "forbidden",
        "transfer_id_reused",
    )


def test_a_reused_transfer_id_releases_nothing() -> None:
    cmd = book("tr_1", "wal_a", "wal_b", "1", "key-1")
    assert allowance_release(cmd, Topics("sluice"), LEDGER, transfer_id_reused("tr_1")) is None
    other = ServiceError(ErrorCode.FORBIDDEN, "no", details={"reason": "insufficient_funds"})
    assert allowance_release(cmd, Topics("sluice"), LEDGER, other) is not None  # its own hold, given back
