"""The gateway's revocation floor (gateway.revocations): whether a cached credential is still
good is decided from PostgreSQL's polls and admin's control events, kept in memory, never from
a value in Valkey; cached records are believed only while the last poll is fresh.
Against real stores, Valkey rolled back: tests/inprocess/test_security_cache_rollback.py.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from common.auth import KeyRecord, TenantRecord, hash_api_key
from common.cache_mac import SKEW_S, CacheMac
from common.contracts.events import ControlEvent
from common.errors import ErrorCode, ServiceError
from gateway import control
from gateway.auth import CACHE_TTL_S, Authenticator
from gateway.revocations import RETAIN_S, Revocations, Snapshot, poll_forever

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _floor(trust_s: float = 10.0) -> tuple[Revocations, Clock]:
    clock = Clock()
    return Revocations(trust_s=trust_s, clock=clock), clock


def test_nothing_cached_is_believed_before_the_first_poll() -> None:
    floor, _ = _floor()
    assert not floor.trusted()


def test_cached_records_are_believed_only_within_trust_s_of_the_last_poll_start() -> None:
    floor, clock = _floor(trust_s=10.0)
    floor.learn_poll(clock.now, Snapshot())
    clock.now += 9.9
    assert floor.trusted()
    clock.now += 0.2  # the polls failed since: the floor is stale, fail closed
    assert not floor.trusted()
    floor.learn_poll(clock.now - 20, Snapshot())  # a poll that started long ago proves nothing
    assert not floor.trusted()
    floor.learn_poll(clock.now, Snapshot())
    assert floor.trusted()


def test_a_poll_refuses_what_postgresql_revoked_or_disabled_whatever_the_cache_says() -> None:
    floor, clock = _floor()
    key, jti, tenant = hash_api_key("sk_test_x"), uuid.uuid4().hex, str(uuid.uuid4())
    floor.learn_poll(clock.now, Snapshot(frozenset({key}), frozenset({jti}), frozenset({tenant})))
    assert floor.key_revoked(key) and floor.token_revoked(jti) and floor.tenant_disabled(tenant)
    assert not floor.key_revoked(hash_api_key("sk_test_y")) and not floor.tenant_disabled(str(uuid.uuid4()))


def test_an_enabled_tenant_leaves_the_disabled_set_but_a_revocation_stays() -> None:
    floor, clock = _floor()
    key, tenant = hash_api_key("sk_test_x"), str(uuid.uuid4())
    floor.learn_poll(clock.now, Snapshot(key_hashes=frozenset({key}), disabled_tenants=frozenset({tenant})))
    clock.now += 2
    floor.learn_poll(clock.now, Snapshot())  # enable_tenant; the key's row left the window
    assert not floor.tenant_disabled(tenant)
    assert floor.key_revoked(key)  # remembered RETAIN_S after it was last seen


def test_a_control_event_refuses_at_once_and_a_tenant_is_reread_until_a_later_poll() -> None:
    floor, clock = _floor()
    key, jti, tenant = hash_api_key("sk_test_x"), uuid.uuid4().hex, str(uuid.uuid4())
    floor.learn_poll(clock.now, Snapshot())
    poll_started = clock.now + 1
    clock.now += 2
    floor.learn_event("api_key.revoked", key)
    floor.learn_event("access_token.revoked", jti)
    floor.learn_event("tenant.updated", tenant)
    assert floor.key_revoked(key) and floor.token_revoked(jti)
    assert not floor.tenant_settled(tenant)
    floor.learn_poll(poll_started, Snapshot())  # started before the event: may predate the change
    assert not floor.tenant_settled(tenant)
    clock.now += 1
    floor.learn_poll(clock.now, Snapshot())
    assert floor.tenant_settled(tenant) and floor.key_revoked(key)


def test_a_revocation_is_remembered_longer_than_any_record_sealed_before_it_can_live() -> None:
    # A record sealed from a row read before the revocation expires CACHE_TTL_S after that
    # read, judged with up to SKEW_S of clock difference between gateways.
    assert RETAIN_S >= CACHE_TTL_S + SKEW_S + 60  # and a minute's room for the database's clock
    floor, clock = _floor()
    key = hash_api_key("sk_test_x")
    floor.learn_event("api_key.revoked", key)
    clock.now += RETAIN_S - 1
    floor.learn_poll(clock.now, Snapshot())
    assert floor.key_revoked(key)
    clock.now += 2
    floor.learn_poll(clock.now, Snapshot())
    assert not floor.key_revoked(key)  # bounded memory


def test_a_failed_poll_leaves_the_floor_to_age_and_the_next_one_refreshes_it() -> None:
    floor = Revocations(trust_s=10.0)
    reads = 0
    failed = asyncio.Event()
    checked = asyncio.Event()  # the second poll answers only once the first one's effect is seen

    async def read() -> Snapshot:
        nonlocal reads
        reads += 1
        if reads == 1:
            failed.set()  # main runs once the failure is handled and the poller sleeps
            raise OSError("down")
        await checked.wait()
        return Snapshot(key_hashes=frozenset({"k" * 64}))

    async def main() -> None:
        task = asyncio.create_task(poll_forever(floor, read, 0.01))
        await failed.wait()
        assert not floor.trusted()  # a failed poll teaches the floor nothing
        checked.set()
        for _ in range(1000):
            await asyncio.sleep(0.01)
            if floor.trusted():
                break
        task.cancel()

    asyncio.run(main())
    assert floor.trusted() and floor.key_revoked("k" * 64)


def test_a_control_event_reaches_the_floor_even_when_valkey_fails() -> None:
    floor, _ = _floor()
    key = hash_api_key("sk_test_x")

    class Down:
        def pipeline(self, transaction: bool = True) -> Any:
            raise ConnectionError("valkey down")

    raw = msgspec.json.encode(ControlEvent(kind="api_key.revoked", key_hash=key))
    with pytest.raises(ConnectionError):
        asyncio.run(control.evict_named(Down(), [raw], floor))  # type: ignore[arg-type]
    assert floor.key_revoked(key)  # retried by the consumer; refused meanwhile


# ---- the Authenticator's decision, Valkey rolled back (a fake Valkey answers the hot path) ----

MAC = CacheMac([("k1", b"\x01" * 32)])


class RolledBack:
    """A Valkey that answers the hot path's script with genuine records from before a
    revocation, their generation deleted (''), as the attack did."""

    def __init__(self, key_name: str, key_value: bytes, tenant_name: str, tenant_value: bytes) -> None:
        self.answer = [
            MAC.seal(key_name, b"", key_value, CACHE_TTL_S),
            b"",
            MAC.seal(tenant_name, b"", tenant_value, CACHE_TTL_S),
            b"",
            1,
        ]
        self.deleted: list[str] = []

    def register_script(self, script: str) -> Any:
        async def run(keys: list[str], args: list[Any]) -> list[Any]:
            return self.answer

        return run

    async def get(self, name: str) -> bytes:
        return b""  # a generation, as deleted

    async def delete(self, name: str) -> None:
        self.deleted.append(name)


def _no_postgresql() -> Any:
    raise AssertionError("the hot path read PostgreSQL")


def _auth(floor: Revocations) -> tuple[Authenticator, str, str]:
    from common.auth import key_cache_name, tenant_cache_name

    key = "sk_test_" + "a" * 43
    tenant = str(uuid.uuid4())
    rec = KeyRecord(key_id="key_1", tenant_id=tenant, mode="sandbox", scopes=["customers:write"])
    trec = TenantRecord(
        tenant_id=tenant,
        tenant_name="t",
        default_mode="sandbox",
        rate_limit_per_minute=60,
        live_enabled=False,
    )
    valkey = RolledBack(
        key_cache_name(hash_api_key(key)),
        msgspec.json.encode(rec),
        tenant_cache_name(tenant),
        msgspec.json.encode(trec),
    )
    auth = Authenticator(valkey, _no_postgresql, MAC, revocations=floor)  # type: ignore[arg-type]
    return auth, key, tenant


def test_a_rolled_back_key_record_is_refused_by_the_floor_without_reading_postgresql() -> None:
    floor, clock = _floor()
    auth, key, _ = _auth(floor)
    floor.learn_poll(clock.now, Snapshot())
    principal = asyncio.run(auth.authenticate(f"Bearer {key}"))  # the control: believed
    assert principal.key_id == "key_1"
    floor.learn_event("api_key.revoked", hash_api_key(key))
    with pytest.raises(ServiceError) as err:
        asyncio.run(auth.authenticate(f"Bearer {key}"))
    assert err.value.code == ErrorCode.UNAUTHORIZED


class Rows:
    """PostgreSQL answering one tenant row, disabled (``gateway.repository.tenant_by_id``)."""

    def __init__(self, tenant_id: str) -> None:
        self.row = SimpleNamespace(
            id=tenant_id,
            name="t",
            default_mode="sandbox",
            rate_limit_per_minute=60,
            live_enabled=False,
            metadata={},
            disabled_at=datetime.now(UTC),
        )
        self.reads = 0

    def __call__(self) -> Rows:
        return self

    async def __aenter__(self) -> Rows:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def execute(self, query: object) -> Any:
        self.reads += 1
        return SimpleNamespace(first=lambda: self.row)


def test_a_rolled_back_tenant_record_is_not_believed_when_postgresql_says_disabled() -> None:
    floor, clock = _floor()
    auth, key, tenant = _auth(floor)
    auth.sessions = rows = Rows(tenant)  # type: ignore[assignment]
    floor.learn_poll(clock.now, Snapshot(disabled_tenants=frozenset({tenant})))
    with pytest.raises(ServiceError) as err:
        asyncio.run(auth.authenticate(f"Bearer {key}"))
    assert err.value.code == ErrorCode.FORBIDDEN
    assert rows.reads == 1  # the cached "not disabled" was not believed: the row decided


def test_a_cached_refusal_is_always_believed_and_not_disabled_only_when_nothing_says_otherwise() -> None:
    floor, clock = _floor()
    tenant, other = str(uuid.uuid4()), str(uuid.uuid4())
    assert floor.believes_tenant(tenant, disabled=True)  # stale floor: a refusal still stands
    assert not floor.believes_tenant(tenant, disabled=False)
    floor.learn_poll(clock.now, Snapshot(disabled_tenants=frozenset({tenant})))
    assert not floor.believes_tenant(tenant, disabled=False) and floor.believes_tenant(other, disabled=False)
    floor.learn_event("tenant.updated", other)
    assert not floor.believes_tenant(other, disabled=False)


def test_a_stale_floor_believes_nothing_cached() -> None:
    floor, clock = _floor(trust_s=10.0)
    auth, key, _ = _auth(floor)
    floor.learn_poll(clock.now, Snapshot())
    clock.now += 11  # no poll since: the cached record is not believed, PostgreSQL is asked
    with pytest.raises(AssertionError, match="read PostgreSQL"):
        asyncio.run(auth.authenticate(f"Bearer {key}"))
