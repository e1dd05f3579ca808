"""common.authority (docs/security.md, "no single point of trust"): what a signature covers,
whose key may sign what, expiry, rotation, and settings that never echo key material."""

from __future__ import annotations

import base64

import msgspec
import pytest

from common import authority
from common.authority import (
    EVENT_SIGNERS,
    RECORD_TTL_S,
    RELEASE_SIGNERS,
    USAGE_SIGNERS,
    AuthorityError,
    AuthorityInvalid,
    SigningKey,
    VerifyKeys,
)
from common.contracts.base import Ctx, Decision, encode
from common.contracts.commands import CreateTransfer, Party, ReleaseAllowance, ReviewTransfer
from common.contracts.events import EVENT_RECORDS, EventBatch, TransferUpdated
from common.settings import Settings

pytestmark = pytest.mark.unit

KEYS = authority.new_settings("u")
COMPLIANCE = SigningKey.parse(KEYS["SLUICE_COMPLIANCE_SIGNING_KEY"], "compliance")
ADMIN = SigningKey.parse(KEYS["SLUICE_ADMIN_SIGNING_KEY"], "admin")
VERIFY = VerifyKeys.parse(KEYS["SLUICE_AUTHORITY_VERIFY_KEYS"])


def transfer(**over: object) -> CreateTransfer:
    fields: dict[str, object] = {
        "command_id": "cmd_1",
        "ctx": Ctx(request_id="req_1", tenant_id="ten_1", mode="sandbox", reply_to="replies.a"),
        "transfer_id": "tr_1",
        "kind": "transfer",
        "source": Party(payment_rail="provider_wallet", currency="USDC", provider_wallet_id="wal_a"),
        "destination": Party(payment_rail="provider_wallet", currency="USDC", provider_wallet_id="wal_b"),
        "amount": "10.00",
        "currency": "USDC",
        "idempotency_key": "k" * 16,
        "decision": Decision(decision_id="dec_1", outcome="allow", rule="r"),
        **over,
    }
    return CreateTransfer(**fields)  # type: ignore[arg-type]


def review_cmd() -> ReviewTransfer:
    ctx = Ctx(request_id="r", tenant_id="t", mode="sandbox")
    return ReviewTransfer(command_id="cmd_r", ctx=ctx, decision="approve", transfer_id="tr")


def why(cmd: object, allowed: tuple[str, ...] = ("compliance",), now: float | None = None) -> str:
    with pytest.raises(AuthorityInvalid) as refused:
        VERIFY.verify(cmd, allowed, now=now)  # type: ignore[arg-type]
    return refused.value.why


def test_a_signed_command_verifies_and_survives_the_wire() -> None:
    signed = COMPLIANCE.sign(transfer())
    assert VERIFY.verify(signed, ("compliance",)) == "compliance"
    back = msgspec.json.decode(msgspec.json.encode(signed), type=CreateTransfer)
    assert VERIFY.verify(back, ("compliance",)) == "compliance"


@pytest.mark.parametrize(
    "change",
    [
        {"amount": "10.01"},
        {"currency": "EURC"},
        {"transfer_id": "tr_2"},
        {"command_id": "cmd_2"},
        {"destination": Party(payment_rail="provider_wallet", currency="USDC", provider_wallet_id="wal_c")},
        {"decision": Decision(decision_id="dec_1", outcome="review", rule="r")},
        {"ctx": Ctx(request_id="req_1", tenant_id="ten_2", mode="sandbox", reply_to="replies.a")},
        {"ctx": Ctx(request_id="req_1", tenant_id="ten_1", mode="production", reply_to="replies.a")},
        {
            "ctx": Ctx(
                request_id="req_1", tenant_id="ten_1", mode="sandbox", live_enabled=True, reply_to="replies.a"
            )
        },
        # the answer goes only where the signer sent it (common.replies)
        {
            "ctx": Ctx(
                request_id="req_1", tenant_id="ten_1", mode="sandbox", reply_to="sluice.journal.anchors"
            )
        },
        {"ctx": Ctx(request_id="req_1", tenant_id="ten_1", mode="sandbox", reply_to=None)},
    ],
    ids=lambda c: next(iter(c)),
)
def test_every_field_that_moves_money_or_names_the_owner_is_covered(change: dict[str, object]) -> None:
    signed = COMPLIANCE.sign(transfer())
    assert why(msgspec.structs.replace(signed, **change)) == "bad_signature"


def test_the_request_id_is_not_covered_and_the_reply_address_is() -> None:
    """The request id only correlates logs; the reply address is where the answer goes, so a
    stored decision answered to the gateway waiting now is signed again by compliance
    (``compliance.service.readdressed``), never readdressed by whoever relays it."""
    signed = COMPLIANCE.sign(transfer())
    traced = msgspec.structs.replace(signed, ctx=msgspec.structs.replace(signed.ctx, request_id="req_9"))
    assert VERIFY.verify(traced, ("compliance",)) == "compliance"
    moved = msgspec.structs.replace(signed, ctx=msgspec.structs.replace(signed.ctx, reply_to="replies.b"))
    assert why(moved) == "bad_signature"
    assert VERIFY.verify(COMPLIANCE.sign(moved), ("compliance",)) == "compliance"


def test_whose_key_may_sign_what() -> None:
    assert why(transfer()) == "unsigned"
    assert why(ADMIN.sign(transfer())) == "wrong_signer"  # admin cannot stand in for compliance
    review = ReviewTransfer(
        command_id="cmd_r",
        ctx=Ctx(request_id="r", tenant_id="t", mode="sandbox"),
        decision="approve",
        transfer_id="tr",
    )
    assert why(COMPLIANCE.sign(review), ("admin",)) == "wrong_signer"
    assert VERIFY.verify(ADMIN.sign(review), ("admin",)) == "admin"
    other = SigningKey.parse(authority.new_signing_setting("compliance", "other"), "compliance")
    assert why(other.sign(transfer())) == "unknown_key"
    # a grant that claims compliance under admin's key id is refused: the id names the signer
    forged = msgspec.structs.replace(
        ADMIN.sign(transfer()),
        authority=msgspec.structs.replace(ADMIN.sign(transfer()).authority, signer="compliance"),  # type: ignore[arg-type]
    )
    assert why(forged) == "unknown_key"


def test_a_grant_expires() -> None:
    signed = COMPLIANCE.sign(transfer(), now=1_000_000)
    assert signed.authority is not None and signed.authority.expires_at == 1_000_000 + COMPLIANCE.ttl_s
    assert VERIFY.verify(signed, ("compliance",), now=1_000_000 + COMPLIANCE.ttl_s) == "compliance"
    assert why(signed, now=1_000_001 + COMPLIANCE.ttl_s) == "expired"


def test_rotation_verifies_old_and_new_keys_while_both_are_listed() -> None:
    new = authority.new_signing_setting("compliance", "2")
    both = VerifyKeys.parse(KEYS["SLUICE_AUTHORITY_VERIFY_KEYS"] + "," + authority.verify_setting(new))
    fresh = SigningKey.parse(new, "compliance")
    assert both.verify(COMPLIANCE.sign(transfer()), ("compliance",)) == "compliance"
    assert both.verify(fresh.sign(transfer()), ("compliance",)) == "compliance"
    assert why(fresh.sign(transfer())) == "unknown_key"  # not yet added to the old list


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("compliance-1", "entry 1 of SLUICE_AUTHORITY_VERIFY_KEYS is not kid:base64"),
        ("compliance-1:***", "key 'compliance-1' of SLUICE_AUTHORITY_VERIFY_KEYS is not valid base64"),
        ("compliance-1:" + base64.b64encode(b"short").decode(), "must be 32 bytes"),
        (
            "gateway-1:" + base64.b64encode(bytes(32)).decode(),
            "must start with compliance-, admin- or ledger-",
        ),
    ],
)
def test_malformed_keys_are_refused_without_echoing_them(setting: str, message: str) -> None:
    with pytest.raises(AuthorityError) as refused:
        VerifyKeys.parse(setting)
    assert message in str(refused.value)
    assert setting.partition(":")[2] not in str(refused.value) or not setting.partition(":")[2]


def test_a_signing_key_must_name_its_own_signer() -> None:
    with pytest.raises(AuthorityError, match="does not name admin"):
        SigningKey.parse(KEYS["SLUICE_COMPLIANCE_SIGNING_KEY"], "admin")
    with pytest.raises(AuthorityError, match="exactly one"):
        SigningKey.parse(
            KEYS["SLUICE_COMPLIANCE_SIGNING_KEY"] + "," + KEYS["SLUICE_COMPLIANCE_SIGNING_KEY"], "compliance"
        )


def test_admission_counts_each_refusal_and_passes_what_needs_no_authority() -> None:
    from common.metrics import AUTHORITY_REFUSED

    check = authority.admit(
        "test", VERIFY, lambda cmd: () if isinstance(cmd, ReviewTransfer) else ("compliance",)
    )
    before = AUTHORITY_REFUSED.labels("test", "unsigned")._value.get()
    with pytest.raises(AuthorityInvalid):
        check(transfer())
    assert AUTHORITY_REFUSED.labels("test", "unsigned")._value.get() == before + 1
    check(COMPLIANCE.sign(transfer()))
    check(
        ReviewTransfer(
            command_id="c",
            ctx=Ctx(request_id="r", tenant_id="t", mode="sandbox"),
            decision="approve",
            transfer_id="x",
        )
    )


LEDGER = SigningKey.parse(KEYS["SLUICE_LEDGER_SIGNING_KEY"], "ledger")


def failed_update(transfer_id: str = "tr_1", state: str = "failed") -> TransferUpdated:
    return TransferUpdated(
        event_id="evt_1",
        tenant_id="ten_1",
        mode="sandbox",
        created_at="2026-11-28T10:00:00Z",
        data={"transfer_id": transfer_id, "state": state, "previous_state": "processing", "amount": "10.00"},
    )


def test_the_ledgers_records_verify_after_the_wire_and_nothing_in_them_can_change() -> None:
    """A release, one event, and one fact's events: each signed whole by the ledger."""
    for record in (
        failed_update(),
        EventBatch(tenant_id="ten_1", events=[failed_update(), failed_update("tr_2")]),
    ):
        signed = LEDGER.sign(record)
        back = EVENT_RECORDS.decode(encode(signed))
        assert VERIFY.verify(back, EVENT_SIGNERS) == "ledger"
    event = LEDGER.sign(failed_update())
    for change in (
        {"data": {**event.data, "state": "completed"}},
        {"tenant_id": "ten_2"},
        {"event_id": "evt_2"},
    ):
        assert why(msgspec.structs.replace(event, **change), EVENT_SIGNERS) == "bad_signature"
    batch = LEDGER.sign(EventBatch(tenant_id="ten_1", events=[failed_update()]))
    more = msgspec.structs.replace(batch, events=[*batch.events, failed_update("tr_9")])
    assert why(more, EVENT_SIGNERS) == "bad_signature"
    release = LEDGER.sign(
        ReleaseAllowance(command_id="release:cmd_1", ctx=transfer().ctx, transfer_id="tr_1")
    )
    assert VERIFY.verify(release, RELEASE_SIGNERS) == "ledger"
    assert why(msgspec.structs.replace(release, transfer_id="tr_2"), RELEASE_SIGNERS) == "bad_signature"


def test_no_decider_stands_in_for_another_on_a_record_or_a_command() -> None:
    assert why(failed_update(), EVENT_SIGNERS) == "unsigned"
    assert why(COMPLIANCE.sign(failed_update()), EVENT_SIGNERS) == "wrong_signer"
    assert why(ADMIN.sign(failed_update()), USAGE_SIGNERS) == "wrong_signer"  # cap: the ledger's word alone
    release = ReleaseAllowance(command_id="release:cmd_1", ctx=transfer().ctx, transfer_id="tr_1")
    assert why(COMPLIANCE.sign(release), RELEASE_SIGNERS) == "wrong_signer"
    assert why(LEDGER.sign(transfer())) == "wrong_signer"  # the ledger approves nothing it applies
    assert why(LEDGER.sign(review_cmd()), ("admin",)) == "wrong_signer"


def test_a_ledger_record_lives_as_long_as_its_topic_keeps_it_and_less_than_webhooks_keeps_events() -> None:
    """Replay: a captured event is stored already (an event id is stored once) or expired."""
    defaults = Settings()
    assert LEDGER.ttl_s == RECORD_TTL_S
    assert defaults.kafka_retention_ms // 1000 <= RECORD_TTL_S < defaults.webhooks_retention_s
    signed = LEDGER.sign(failed_update(), now=1_000_000)
    assert why(signed, EVENT_SIGNERS, now=1_000_001 + RECORD_TTL_S) == "expired"


def test_compliance_gives_cap_back_only_on_the_ledgers_signature() -> None:
    from common.metrics import AUTHORITY_REFUSED
    from compliance.usage import Signal, admission

    admit = admission(VERIFY)

    def check(raw: bytes) -> None:
        admit(Signal.read(raw))

    before = AUTHORITY_REFUSED.labels("compliance", "unsigned")._value.get()
    with pytest.raises(AuthorityInvalid):
        check(encode(failed_update()))
    assert AUTHORITY_REFUSED.labels("compliance", "unsigned")._value.get() == before + 1
    with pytest.raises(AuthorityInvalid):
        check(encode(ADMIN.sign(failed_update())))
    with pytest.raises(AuthorityInvalid) as odd:
        check(b'{"type": "transfer.updated", "data": {"state": "failed", "transfer_id": "tr_1"}}')
    assert odd.value.why == "unreadable"
    check(encode(LEDGER.sign(failed_update())))
    check(encode(LEDGER.sign(EventBatch(tenant_id="ten_1", events=[failed_update()]))))
    check(encode(failed_update(state="completed")))  # gives nothing back: nothing to believe
