"""Ledger service: FastStream consumer of ledger commands, with health and metrics routes."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable

from faststream.asgi import AsgiFastStream

from common.broker import subscribe
from common.logging import setup_logging
from common.outbox import Outbox
from common.service import Runtime, build_runtime, consumer_app
from common.settings import Settings
from common.tracing import publish
from ledger.anchors import KEY_SETTING, VERIFY_SETTING, AnchorKey, Anchors
from ledger.config import LedgerConfig
from ledger.handlers import LedgerConsumer
from ledger.simulator import Simulator


def create_app(settings: Settings) -> AsgiFastStream:
    setup_logging("ledger")
    runtime = build_runtime("ledger", settings)
    anchors = _anchors(settings, runtime)
    ledger_config = LedgerConfig(
        settle_s=settings.sandbox_settle_s,
        read_anchors=anchors.read if anchors else None,
        # A chain without any anchor is a finding once its first entry is this old: three
        # intervals, and never under 30 s (a turn delayed on a loaded host is not a lost topic).
        anchor_grace_s=max(3 * settings.journal_anchor_interval_s, 30.0),
    )
    outbox = Outbox("ledger", runtime.broker, lazy_delete=True, answers_from_inbox=True)
    consumer = LedgerConsumer(
        settings,
        runtime.broker,
        runtime.sessions,
        outbox,
        runtime.topics,
        ledger_config=ledger_config,
    )
    simulator = Simulator(runtime.sessions, outbox, runtime.topics, ledger_config, consumer.signing_key)
    subscribe(
        runtime.broker,
        settings,
        runtime.topics.ledger_commands,
        runtime.topics.group("ledger"),
        consumer.processor(runtime.readiness),
    )
    subscribe(
        runtime.broker,
        settings,
        runtime.topics.ledger_reads,
        runtime.topics.group("ledger-reads"),
        consumer.reads_processor(runtime.readiness),
    )
    tasks: dict[str, Callable[[], Awaitable[None]]] = {
        "outbox-relay": lambda: outbox.relay_forever(runtime.sessions),
        "simulator": simulator.run_forever,
    }
    if anchors is not None and anchors.key is not None:
        tasks["journal-anchors"] = anchors.run_forever
    return consumer_app(
        runtime,
        tasks=tasks,
        stats=lambda: {
            "processed": consumer.processed,
            "simulated_steps": simulator.steps,
            "anchors_published": anchors.published if anchors else 0,
        },
    )


def _anchors(settings: Settings, runtime: Runtime) -> Anchors | None:
    """The journal's anchors (ledger.anchors): the signing key and the verify keys are
    required in production (the verify keys must hold the signing key's public key: checked
    with the other secrets, ``Settings.weak_secrets``). In development a missing verify keys
    setting is the signing key's public key; without the signing key an instance given the
    verify keys checks anchors (verify_journal) and publishes none, and one given neither has
    anchoring off (verify_journal then checks the chains against themselves only)."""
    log = logging.getLogger(__name__)
    signing = settings.journal_anchor_key.get_secret_value()
    if settings.env == "production" and not (signing and settings.journal_anchor_verify_keys.strip()):
        log.critical(
            "sluice: refusing to start the ledger in production without %s and %s",
            KEY_SETTING,
            VERIFY_SETTING,
        )
        raise SystemExit(2)
    if not signing and settings.journal_anchor_verify_keys.strip():
        log.warning("journal anchors: %s is not set: this instance verifies, never anchors", KEY_SETTING)
        return Anchors(
            settings,
            runtime.sessions,
            runtime.topics.journal_anchors,
            functools.partial(publish, runtime.broker, anchor=True),
        )
    if not signing:
        log.warning("journal anchors off: %s is not set (development)", KEY_SETTING)
        return None
    if not settings.journal_anchor_verify_keys.strip():
        public = AnchorKey.parse(signing).public_entry()  # a public key, not a secret
        settings = settings.model_copy(update={"journal_anchor_verify_keys": public})
    return Anchors(
        settings,
        runtime.sessions,
        runtime.topics.journal_anchors,
        functools.partial(publish, runtime.broker, anchor=True),
    )
