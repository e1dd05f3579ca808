"""A turn starts when the last one has finished (yardstick 6, tools.bench.quiesce): consumer
lag 0, outboxes empty, the stack's CPU back at idle, each printed. On today's harness ABAB turns
and the runs after them were separated by a 2 s sleep, whatever the stack still had to do."""

from __future__ import annotations

import pytest

from tools.bench.quiesce import OUTBOXES, Reading, line, parse_lag, quiet

pytestmark = pytest.mark.unit

QUIET = Reading({"ledger-commands": 0.0}, {"ledger": 0, "compliance": 0}, 0.03)


def test_quiet_needs_no_lag_no_outbox_rows_and_idle_cpu() -> None:
    assert quiet(QUIET, idle_cpu=0.02)
    assert not quiet(Reading({"ledger-commands": 3.0}, QUIET.outbox, 0.03), 0.02)
    assert not quiet(Reading(QUIET.lag, {"ledger": 0, "compliance": 12}, 0.03), 0.02)
    assert not quiet(Reading(QUIET.lag, QUIET.outbox, 0.40), 0.02)  # still busy
    assert quiet(Reading(QUIET.lag, QUIET.outbox, 0.07), 0.02)  # within the margin of idle
    unknown = Reading(QUIET.lag, QUIET.outbox, 0.03, ("http://127.0.0.1:9/metrics",))
    assert not quiet(unknown, 0.02)  # a lag that could not be read is not 0
    assert line(unknown, 0.02, 1.0).endswith("; lag unknown: http://127.0.0.1:9/metrics")


def test_each_reading_is_printed() -> None:
    busy = Reading({"ledger-commands": 120.0, "webhooks-events": 0.0}, {"ledger": 4, "compliance": 0}, 0.5)
    assert line(busy, 0.02, 120.4) == (
        "NOT QUIET after 120 s: consumer lag 120 (behind: ledger-commands 120), outbox rows 4 "
        "(pending: ledger 4), stack CPU 50.0% of one core (idle 2.0%)"
    )
    assert line(QUIET, 0.02, 3.0).startswith("quiet after 3 s: consumer lag 0 (behind: none), outbox rows 0")


def test_lag_is_read_from_each_consumers_gauges() -> None:
    text = (
        "# TYPE sluice_consumer_lag gauge\n"
        'sluice_consumer_lag{consumer="ledger-commands",partition="0",topic="sluice.ledger.commands"} 3.0\n'
        'sluice_consumer_lag{consumer="ledger-commands",partition="1",topic="sluice.ledger.commands"} 2.0\n'
        'sluice_consumer_lag{consumer="webhooks-events",partition="0",topic="sluice.events"} 0.0\n'
        "sluice_other 7\n"
    )
    assert parse_lag(text) == {"ledger-commands": 5.0, "webhooks-events": 0.0}


def test_every_outbox_is_watched() -> None:
    from admin.models import outbox as admin_outbox
    from compliance.models import outbox as compliance_outbox
    from ledger.models import outbox as ledger_outbox
    from webhooks.models import outbox as webhooks_outbox

    schemas = {t.schema for t in (admin_outbox, compliance_outbox, ledger_outbox, webhooks_outbox)}
    assert schemas == set(OUTBOXES)
