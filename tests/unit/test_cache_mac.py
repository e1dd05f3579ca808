"""common.cache_mac: the MAC on what the gateway trusts from Valkey (docs/security.md, "Valkey
is a cache, never a root of trust"), and SLUICE_GATEWAY_CACHE_KEY refused in production when
weak or missing."""

from __future__ import annotations

import base64
import logging

import pytest

from common.cache_mac import FORGED, CacheKeyError, CacheMac, Forged, refused, weak_cache_keys
from common.keyring import new_key_setting
from common.settings import load_settings
from tests.support.secrets_env import production_env, strong_secrets

pytestmark = pytest.mark.unit

NAME = "sluice:apikey:" + "ab" * 32
VALUE = b'{"key_id":"key_1","tenant_id":"t","mode":"sandbox","scopes":[],"revoked":false}'


@pytest.fixture
def mac() -> CacheMac:
    return CacheMac.parse(new_key_setting("c1"))


def test_a_sealed_record_opens_under_its_name_generation_and_key(mac: CacheMac) -> None:
    sealed = mac.seal(NAME, b"7", VALUE, 300, now=1000)
    assert sealed.endswith(b"|" + VALUE)  # readable: the hot path's script reads tenant and mode
    assert mac.open(NAME, sealed, b"7", 300, now=1000) == VALUE


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda m, s: m.open("sluice:apikey:" + "cd" * 32, s, b"7", 300, now=1000), "mac"),  # copied
        (lambda m, s: m.open(NAME, s, b"8", 300, now=1000), "generation"),  # evicted since
        (
            lambda m, s: m.open(NAME, s.replace(b'"revoked":false', b'"revoked":true '), b"7", 300, now=1000),
            "mac",
        ),
        (lambda m, s: m.open(NAME, b"m1.c1.7.99999." + s.split(b".", 4)[4], b"7", 300, now=1000), "mac"),
        (lambda m, s: m.open(NAME, VALUE, b"7", 300, now=1000), "format"),  # the unsigned JSON of the attack
        (
            lambda m, s: (
                m.open(NAME, s, b"7", 300, now=1000)
                and CacheMac.parse(new_key_setting("c1")).open(NAME, s, b"7", 300, now=1000)
            ),
            "mac",
        ),  # another key under the same id
        (
            lambda m, s: CacheMac.parse(new_key_setting("c2")).open(NAME, s, b"7", 300, now=1000),
            "unknown_key",
        ),
    ],
)
def test_what_does_not_verify_is_forged(mac: CacheMac, change, reason: str) -> None:  # type: ignore[no-untyped-def]
    sealed = mac.seal(NAME, b"7", VALUE, 300, now=1000)
    with pytest.raises(Forged) as err:
        change(mac, sealed)
    assert err.value.reason == reason


def test_expiry_is_bounded_by_the_ttl(mac: CacheMac) -> None:
    sealed = mac.seal(NAME, b"", VALUE, 300, now=1000)
    assert mac.open(NAME, sealed, b"", 300, now=1200) == VALUE
    assert mac.open(NAME, sealed, b"", 300, now=1302) is None  # expired: a miss, not forged
    long = mac.seal(NAME, b"", VALUE, 86400, now=1000)  # signed, but longer than this kind's TTL
    with pytest.raises(Forged) as err:
        mac.open(NAME, long, b"", 300, now=1000)
    assert err.value.reason == "expiry"


def test_keys_rotate_by_id() -> None:
    old, new = new_key_setting("old1"), new_key_setting("new1")
    sealed = CacheMac.parse(old).seal(NAME, b"", VALUE, 300)
    rotated = CacheMac.parse(f"{new},{old}")
    assert rotated.open(NAME, sealed, b"", 300) == VALUE
    assert rotated.seal(NAME, b"", VALUE, 300).startswith(b"m1.new1.")


@pytest.mark.parametrize(
    "setting",
    [
        "",
        "c1",
        "c1:notbase64!",
        "c1:" + base64.b64encode(b"x" * 16).decode(),
        "a.b:" + base64.b64encode(b"x" * 32).decode(),
    ],
)
def test_malformed_settings_are_refused_without_echoing_them(setting: str) -> None:
    with pytest.raises(CacheKeyError) as err:
        CacheMac.parse(setting)
    assert "eHh4" not in str(err.value)


def test_production_refuses_a_weak_or_missing_cache_key(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    weak = "c1:" + base64.b64encode(b"\x00" * 32).decode()
    assert weak_cache_keys(weak, production=True) and not weak_cache_keys(weak, production=False)
    assert not weak_cache_keys(new_key_setting("c1"), production=True)
    for value in (None, weak):
        env = production_env(monkeypatch)
        for k, v in strong_secrets().items():
            env.setenv(k, v)
        if value is None:
            env.delenv("SLUICE_GATEWAY_CACHE_KEY")
        else:
            env.setenv("SLUICE_GATEWAY_CACHE_KEY", value)
        with caplog.at_level(logging.CRITICAL), pytest.raises(SystemExit):
            load_settings("gateway")
        assert "SLUICE_GATEWAY_CACHE_KEY" in caplog.text
        assert base64.b64encode(b"\x00" * 32).decode() not in caplog.text
        caplog.clear()
    env = production_env(monkeypatch)
    for k, v in strong_secrets().items():
        env.setenv(k, v)
    assert load_settings("admin").gateway_cache_key.get_secret_value() == ""  # the gateway only
    assert load_settings("gateway").cache_mac.current == "c1"


def test_a_refusal_is_counted_and_logged_by_kind_only(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Read on its own logger: in the full suite an earlier test's logging set-up (a disabled
    # logger, a raised level, propagation off) hid the warning from caplog (CI run, 19:46).
    logger = logging.getLogger("common.cache_mac")
    monkeypatch.setattr(logger, "disabled", False)
    monkeypatch.setattr(logging.root.manager, "disable", logging.NOTSET)
    logger.addHandler(caplog.handler)
    monkeypatch.setattr(logger, "level", logging.WARNING)
    before = FORGED.labels("api_key")._value.get()
    try:
        refused("api_key", Forged("mac"))
    finally:
        logger.removeHandler(caplog.handler)
    assert FORGED.labels("api_key")._value.get() == before + 1
    assert "api_key" in caplog.text and "mac" in caplog.text
