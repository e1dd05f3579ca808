"""Secrets are never inferred from data (docs/security.md, "Round 4").

A secret rides in ``Result.sealed`` (typed bytes under a known field name) and only those
names are opened; partner text in ``data`` that starts with ``sealed:`` (an Idempotency-Key
echoed by a transfer) is text. Before, the gateway opened every top-level ``sealed:`` string
of ``data``: a transfer created with ``Idempotency-Key: sealed:AAAA...`` answered 500 on every
read, and one such result in a batch left the others without their idempotency record.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from common.contracts import Result, decode, encode
from common.keyring import (
    REPLY_SECRET_FIELDS,
    KeyRing,
    KeyRingError,
    new_key_setting,
    open_reply_secrets,
    seal_for_reply,
)
from gateway.pipeline import Pipeline, result_body
from webhooks.handlers import recorded_before_sealed

pytestmark = pytest.mark.unit

PARTNER_TEXT = "sealed:AAAAAAAAAAAAAAAAAAAAAAAA"


@pytest.fixture
def ring() -> KeyRing:
    return KeyRing.parse(new_key_setting("k1"))


def _transfer(command_id: str = "cmd_1", key: str = PARTNER_TEXT) -> Result:
    data = {"transfer_id": "tr_1", "state": "completed", "idempotency_key": key, "description": key}
    return Result(command_id=command_id, request_id="req_1", status=200, data=data)


def test_partner_text_that_looks_sealed_is_answered_as_text(ring: KeyRing) -> None:
    body = msgspec.json.decode(result_body(_transfer(), "req_1", ring))
    assert body["data"]["idempotency_key"] == PARTNER_TEXT
    assert body["data"]["description"] == PARTNER_TEXT
    # a real ciphertext under the partner's own field is still just text
    real = "sealed:" + msgspec.json.encode(seal_for_reply(ring, "x", "cmd_1")).decode().strip('"')
    again = msgspec.json.decode(result_body(_transfer(key=real), "req_1", ring))
    assert again["data"]["idempotency_key"] == real


def test_a_secret_travels_sealed_beside_data_and_is_opened_under_its_name(ring: KeyRing) -> None:
    sealed = {"signing_secret": seal_for_reply(ring, "whsec_shown_once", "cmd_9")}
    data = {"webhook_id": "we_1"}
    result = Result(command_id="cmd_9", request_id="r", status=201, data=data, sealed=sealed)
    wire = encode(result)
    assert b"whsec_shown_once" not in wire  # never in clear on Kafka
    body = msgspec.json.decode(result_body(decode(wire, Result), "r", ring))
    assert body["data"] == {"webhook_id": "we_1", "signing_secret": "whsec_shown_once"}
    with pytest.raises(KeyRingError):  # bound to its command: copied into another reply, it does not open
        open_reply_secrets(ring, {}, sealed, "cmd_other")


def test_only_known_secret_fields_are_opened(ring: KeyRing) -> None:
    assert {"signing_secret"} == REPLY_SECRET_FIELDS
    sealed = {"idempotency_key": seal_for_reply(ring, "x", "cmd_1")}
    with pytest.raises(KeyRingError, match="not secret fields") as err:
        open_reply_secrets(ring, {"a": 1}, sealed, "cmd_1")
    assert "x" not in str(err.value).replace("not secret fields", "")
    with pytest.raises(KeyRingError, match="not an object"):
        open_reply_secrets(ring, ["a"], {"signing_secret": b"\x02"}, "cmd_1")
    assert open_reply_secrets(ring, {"a": 1}, None, "cmd_1") == {"a": 1}


class _Idem:
    def __init__(self) -> None:
        self.completed: list[tuple[str, str, int, bytes]] = []

    async def complete_many(self, done: list[tuple[str, str, int, bytes]]) -> None:
        self.completed.extend(done)


async def test_one_result_that_does_not_open_leaves_the_rest_of_the_batch_recorded(ring: KeyRing) -> None:
    idem = _Idem()
    pipeline: Any = SimpleNamespace(ring=ring, idem=idem, inflight={})
    foreign = KeyRing.parse(new_key_setting("other"))
    broken = Result(
        command_id="cmd_b",
        request_id="r",
        status=201,
        data={"webhook_id": "we_1"},
        sealed={"signing_secret": seal_for_reply(foreign, "whsec", "cmd_b")},  # a key not in the ring
    )
    batch = [_transfer("cmd_a"), broken, _transfer("cmd_c")]
    for r in batch:
        pipeline.inflight[r.command_id] = ("idem:" + r.command_id, "fp", 0.0)
    await Pipeline.on_results(pipeline, batch)
    assert [name for name, *_ in idem.completed] == ["idem:cmd_a", "idem:cmd_c"]
    assert PARTNER_TEXT.encode() in idem.completed[0][3]


def test_an_inbox_answer_recorded_before_the_sealed_field_moves_its_secret_there(ring: KeyRing) -> None:
    import base64

    ciphertext = seal_for_reply(ring, "whsec_old", "cmd_old")
    legacy = Result(
        command_id="cmd_old",
        request_id="r",
        status=201,
        data={"webhook_id": "we_1", "signing_secret": "sealed:" + base64.b64encode(ciphertext).decode()},
    )
    moved = recorded_before_sealed(legacy)
    assert moved.data == {"webhook_id": "we_1"} and moved.sealed == {"signing_secret": ciphertext}
    body = msgspec.json.decode(result_body(moved, "r", ring))
    assert body["data"]["signing_secret"] == "whsec_old"
    assert recorded_before_sealed(_transfer()) == _transfer()  # only that one field, only its own
