"""API keys, access tokens and webhook signing secrets (docs/security.md, "OWASP API Security
Top 10", API3) never appear in a log, in a Kafka message in clear, or in any response after the
one that created them; nor do the suite's own secrets (operator tokens, JWT and onboarding
secrets, encryption keys)."""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from tests.conftest import ARTIFACTS, Stack, customer_body, make_tenant
from tests.support.admin import admin_ok
from tests.support.webhooks import Receiver

pytestmark = pytest.mark.integration


def _needles(secrets: dict[str, str]) -> dict[str, bytes]:
    """Each secret, and for whsec_ secrets their raw key in base64 as well."""
    out = {}
    for name, s in secrets.items():
        out[name] = s.encode()
        if s.startswith("whsec_"):
            out[name + " (key)"] = s[len("whsec_") :].encode()
    return out


def _suite_secrets(stack: Stack) -> dict[str, str]:
    out = {}
    for entry in stack.env["SLUICE_ADMIN_TOKEN"].split(","):
        out["operator token " + entry.split("=")[0]] = entry.split("=", 1)[-1]
    out["jwt secret"] = stack.env["SLUICE_JWT_SECRET"]
    out["onboarding secret"] = stack.env["SLUICE_ONBOARDING_SECRET"]
    for entry in stack.env["SLUICE_ENCRYPTION_KEYS"].split(","):
        kid, _, key = entry.partition(":")
        out["encryption key " + kid] = key
        out["encryption key raw " + kid] = base64.b64decode(key).hex()
    return out


def _topics_holding(stack: Stack, needles: dict[str, bytes]) -> dict[str, list[str]]:
    """Every record of every ``sluice.`` topic, read from the beginning up to the end offsets
    taken before the read (no consumer group: the partitions are assigned, so nothing waits
    for a group to join, and the read ends on the offsets, not on a quiet spell)."""

    async def scan() -> dict[str, list[str]]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=stack.stores.kafka_bootstrap, enable_auto_commit=False, group_id=None
        )
        admin = AIOKafkaAdminClient(bootstrap_servers=stack.stores.kafka_bootstrap)
        await admin.start()
        try:
            described = await admin.describe_topics(
                [t for t in await admin.list_topics() if t.startswith("sluice.")]
            )
        finally:
            await admin.close()
        parts = [TopicPartition(d["topic"], p["partition"]) for d in described for p in d["partitions"]]
        assert parts, f"no sluice topic on the broker: {described}"
        await consumer.start()
        found: dict[str, list[str]] = {}
        try:
            consumer.assign(parts)
            await consumer.seek_to_beginning(*parts)
            ends = await consumer.end_offsets(parts)
            left = {tp for tp, end in ends.items() if end > 0}
            assert left, f"every sluice topic is empty: {ends}"
            seen = 0
            deadline = time.monotonic() + 120  # a stall, not a quiet spell: fails below
            while left and time.monotonic() < deadline:
                batches = await consumer.getmany(*left, timeout_ms=500, max_records=2000)
                for tp, records in batches.items():
                    for rec in records:
                        seen += 1
                        blob = (
                            (rec.value or b"") + (rec.key or b"") + b"".join(v for _, v in rec.headers or [])
                        )
                        for name, needle in needles.items():
                            if needle in blob:
                                found.setdefault(name, []).append(tp.topic)
                for tp in list(left):
                    if await consumer.position(tp) >= ends[tp]:
                        left.discard(tp)
            assert not left, f"not read to their end offsets in 120 s: {sorted(map(str, left))}"
            assert seen > 0, "nothing read from the broker"
        finally:
            await consumer.stop()
        return found

    return asyncio.run(scan())


def _logs_holding(needles: dict[str, bytes]) -> dict[str, list[str]]:
    logs = list((ARTIFACTS / "logs").glob("*.log"))
    assert logs, "no service logs"
    found: dict[str, list[str]] = {}
    for path in logs:
        text = path.read_bytes()
        for name, needle in needles.items():
            if needle in text:
                found.setdefault(name, []).append(path.name)
    return found


def test_no_secret_in_any_log_topic_or_later_response(stack: Stack) -> None:
    t = make_tenant(stack)
    created: dict[str, str] = {"api key": t.key}
    later: list[bytes] = []  # every response after the creating ones
    receiver = Receiver().start()
    try:
        second = admin_ok(stack, "create_api_key", tenant_id=t.tenant_id, key_label="x", scopes=[])
        created["second api key"] = second["api_key"]
        token = admin_ok(
            stack, "issue_access_token", tenant_id=t.tenant_id, mode="sandbox", scopes=["webhooks:write"]
        )["access_token"]
        created["access token"] = token
        hook = t.post("/v1/webhooks", {"endpoint_url": receiver.url})
        assert hook.status_code == 201, hook.text
        webhook_id = hook.json()["data"]["webhook_id"]
        created["signing secret"] = hook.json()["data"]["signing_secret"]
        rotated = t.post(f"/v1/webhooks/{webhook_id}/rotate-secret", {})
        assert rotated.status_code == 200, rotated.text
        created["rotated signing secret"] = rotated.json()["data"]["signing_secret"]

        # Use every credential, well and badly, so the services have a chance to log them.
        bad = httpx.get(
            stack.gateway + "/v1/health", headers={"Authorization": f"Bearer {t.key}x"}, timeout=30
        )
        later.append(bad.content)
        for cred in (t.key, token, second["api_key"]):
            for gw in stack.gateways:
                r = httpx.get(
                    gw.url + "/v1/webhooks", headers={"Authorization": f"Bearer {cred}"}, timeout=30
                )
                later.append(r.content)
        admin_ok(stack, "revoke_api_key", key_id=second["key_id"])
        later.append(
            httpx.get(
                stack.gateway + "/v1/health",
                headers={"Authorization": f"Bearer {second['api_key']}"},
                timeout=30,
            ).content
        )
        assert t.post("/v1/customers", customer_body()).status_code == 201
        deadline = time.monotonic() + 30
        while len(receiver.received) < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert receiver.received, "no delivery"
        later.append(t.get(f"/v1/webhooks/{webhook_id}").content)
        later.append(t.get("/v1/webhooks").content)
        later.append(t.get("/v1/health").content)
        for action, fields in (
            ("list_tenants", {}),
            ("list_audit_log", {"target": t.tenant_id}),
            ("list_audit_log", {}),
            ("list_deliveries", {"tenant_id": t.tenant_id}),
            ("get_tenant", {"tenant_id": t.tenant_id}),
        ):
            r = stack.admin_call(action, **fields)
            assert r.status_code == 200, (action, r.text)
            later.append(r.content)
        # Headers of the deliveries carry signatures, never the secret.
        later += [str(rec.headers).encode() + rec.body for rec in receiver.received]
    finally:
        receiver.stop()

    needles = _needles(created)
    leaked_responses: dict[str, Any] = {
        name: True for name, needle in needles.items() if any(needle in body for body in later)
    }
    assert not leaked_responses, leaked_responses
    time.sleep(1.5)  # let the services flush their logs
    everything = {**needles, **_needles(_suite_secrets(stack))}
    assert not _logs_holding(everything), _logs_holding(everything)
    assert not _topics_holding(stack, everything), "secrets in clear on Kafka"
