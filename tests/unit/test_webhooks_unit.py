"""Unit tests of the webhooks building blocks: signing (checked against the standardwebhooks
package), encryption at rest, SSRF vetting and the retry schedule."""

from __future__ import annotations

import base64
import ipaddress
from datetime import UTC, datetime

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from common.contracts.events import CustomerCreated
from common.keyring import KeyRing, new_key_setting
from webhooks.delivery import Policy
from webhooks.service import envelope
from webhooks.signing import SecretBox, new_secret, sign, signature_header
from webhooks.targets import Target, TargetError, is_public, parse, vet

pytestmark = pytest.mark.unit


def test_signature_matches_the_standard_webhooks_library() -> None:
    secret = new_secret()
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32
    body = '{"id":"evt_1","data":{"name":"Zoë"}}'.encode()
    ts = int(datetime.now(UTC).timestamp())
    ours = sign(secret, "evt_1", ts, body)
    theirs = Webhook(secret).sign("evt_1", datetime.fromtimestamp(ts, UTC), body.decode())
    assert ours == theirs
    headers = {"webhook-id": "evt_1", "webhook-timestamp": str(ts), "webhook-signature": ours}
    Webhook(secret).verify(body, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(body, headers)


def test_rotation_header_carries_both_signatures_each_verifiable() -> None:
    old, new = new_secret(), new_secret()
    body, ts = b'{"a":1}', int(datetime.now(UTC).timestamp())
    header = signature_header([new, old], "evt_2", ts, body)
    assert header.count("v1,") == 2 and len(header.split(" ")) == 2
    for secret in (old, new):
        Webhook(secret).verify(
            body, {"webhook-id": "evt_2", "webhook-timestamp": str(ts), "webhook-signature": header}
        )


def test_old_timestamps_are_rejected_by_receivers() -> None:
    secret = new_secret()
    ts = int(datetime.now(UTC).timestamp()) - 600
    headers = {
        "webhook-id": "evt_3",
        "webhook-timestamp": str(ts),
        "webhook-signature": sign(secret, "evt_3", ts, b"{}"),
    }
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(b"{}", headers)


def test_secret_box_round_trip_and_binding() -> None:
    box = SecretBox(KeyRing.parse(new_key_setting("a")))
    secret = new_secret()
    sealed = box.seal_secret(secret, "we_1")
    assert secret.encode() not in sealed and base64.b64decode(secret[6:]) not in sealed
    assert box.open_secret(sealed, "we_1") == secret
    with pytest.raises(ValueError):
        box.open_secret(sealed, "we_2")  # bound to its row
    with pytest.raises(ValueError):
        SecretBox(KeyRing.parse(new_key_setting("a"))).open_secret(sealed, "we_1")  # and to the key
    assert box.seal_secret(secret, "we_1") != sealed  # fresh nonce each time


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "169.254.1.1",
        "100.64.0.1",
        "100.100.100.200",
        "0.0.0.0",
        "224.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "fd00:ec2::254",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "2002:7f00:1::",
    ],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert not is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://93.184.216.34/hook", "https_required"),
        ("ftp://example.com/", "invalid_url"),
        ("https://user:pw@example.com/", "invalid_url"),
        ("https:///nohost", "invalid_url"),
        ("not a url", "invalid_url"),
        ("https://example.com:99999/", "invalid_url"),
        ("https://" + "a" * 2050 + ".com/", "invalid_url"),
    ],
)
def test_parse_refusals_name_their_reason(url: str, reason: str) -> None:
    with pytest.raises(TargetError) as exc:
        parse(url, allow_private=False)
    assert exc.value.reason == reason


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/hook",
        "https://10.0.0.5/",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]:8443/",
        "https://localhost/hook",
        "https://[::ffff:192.168.0.1]/",
    ],
)
async def test_vet_refuses_private_targets(url: str) -> None:
    with pytest.raises(TargetError) as exc:
        await vet(url, allow_private=False)
    assert exc.value.reason == "private_target"


async def test_vet_allows_local_targets_when_configured_and_keeps_the_name() -> None:
    target = await vet("http://localhost:8123/hook?x=1", allow_private=True)
    assert target.host == "localhost" and target.port == 8123 and target.host_header == "localhost:8123"
    assert target.addresses and all(not is_public(ipaddress.ip_address(a)) for a in target.addresses)
    public = await vet("https://93.184.216.34/hook", allow_private=False)
    assert public.addresses == ("93.184.216.34",) and public.host_header == "93.184.216.34"
    assert Target("https://[::1]:444/", "https", "::1", 444, ("::1",)).host_header == "[::1]:444"


async def test_unresolvable_host_is_refused() -> None:
    with pytest.raises(TargetError) as exc:
        await vet("https://no-such-host.invalid/hook", allow_private=False)
    assert exc.value.reason == "unresolvable_host"


def test_retry_schedule_and_dead_letter_point() -> None:
    policy = Policy(schedule=(5, 300, 1800), jitter=0.0, timeout_s=15, disable_after_s=1, allow_private=False)
    assert policy.max_attempts == 4
    assert [policy.retry_in(n, 4) for n in (1, 2, 3, 4)] == [5, 300, 1800, None]
    assert policy.retry_in(4, 5) == 1800  # a replayed delivery retries on the last interval
    jittered = Policy(schedule=(100,), jitter=0.1, timeout_s=15, disable_after_s=1, allow_private=False)
    values = {jittered.retry_in(1, 2) for _ in range(50)}
    assert all(90 <= v <= 110 for v in values if v is not None) and len(values) > 1


def test_envelope_is_the_contract_shape_with_partner_safe_data() -> None:
    event = CustomerCreated(
        event_id="evt_x",
        tenant_id="t",
        mode="sandbox",
        created_at="2026-01-01T00:00:00Z",
        country_code="US",
        data={"customer_id": "cus_1"},
    )
    body = envelope(event, 7)
    assert body == (
        b'{"id":"evt_x","type":"customer.created","created_at":"2026-01-01T00:00:00Z",'
        b'"api_version":"1.0.1","mode":"sandbox","sequence":7,"data":{"customer_id":"cus_1"}}'
    )
