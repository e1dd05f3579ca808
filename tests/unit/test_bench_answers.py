"""How the benches count an answer (yardsticks 3 and 4, tools.bench.answers): only a 503 whose
body names ``overloaded`` is shed; any other 5xx is admitted work that failed, counted by its
reason; the half-load percentiles are over 2xx answers only (millisecond-fast refusals must not
flatter them) with the refusals counted apart; the load generator reads each 5xx's reason."""

from __future__ import annotations

import argparse
import asyncio

import pytest

from tools.bench import load
from tools.bench.answers import Answer, Outcome, failed_by_reason, open_loop, outcome, reason_of

pytestmark = pytest.mark.unit


def envelope(reason: str) -> bytes:
    return (
        b'{"success":false,"error":{"code":"provider_unavailable","details":{"reason":"'
        + reason.encode()
        + b'"}}}'
    )


def test_each_answer_has_one_outcome() -> None:
    assert outcome(201) is Outcome.OK
    assert outcome(402) is Outcome.REJECTED
    assert outcome(503, "overloaded") is Outcome.SHED
    for why in ("upstream_timeout", "store_unavailable", "in_flight", None):
        assert outcome(503, why) is Outcome.FAILED
    assert outcome(500, None) is Outcome.FAILED
    assert outcome(502, "overloaded") is Outcome.FAILED  # only a 503 is a refusal for overload
    assert outcome(0) is Outcome.NO_ANSWER and outcome(-1) is Outcome.RUNNING


def test_the_reason_is_read_from_the_envelope() -> None:
    assert reason_of(envelope("in_flight")) == "in_flight"
    assert reason_of(b"{}") is None and reason_of(b"not json") is None and reason_of(b"") is None
    assert reason_of(b'{"error":{"details":{"reason":7}}}') is None


def test_half_load_percentiles_are_over_2xx_answers_and_refusals_are_counted() -> None:
    answers = [Answer(201, None, 0.080)] * 10 + [Answer(503, "overloaded", 0.001)] * 90
    answers += [Answer(503, "upstream_timeout", 2.0), Answer(0, None, 30.0), Answer(-1, None, 12.0)]
    fig = open_loop(answers, elapsed=10.0)
    assert fig["p50_ms"] == pytest.approx(80.0) and fig["p99_ms"] == pytest.approx(80.0)
    assert (fig["refused"], fig["failed"], fig["no_answer"], fig["unfinished"]) == (90, 1, 1, 1)
    assert fig["errors"] == 93 and fig["ok_rps"] == pytest.approx(1.0)
    assert failed_by_reason(answers) == {"503 upstream_timeout": 1}


async def _server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Every tenth request: 201 after 100 ms; the others: 503 overloaded at once."""
    n = 0
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            n += 1
            if n % 10 == 0:
                await asyncio.sleep(0.1)
                writer.write(b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}")
            else:
                body = envelope("overloaded")
                writer.write(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                )
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


async def test_the_load_generator_times_2xx_only_and_counts_refusals() -> None:
    """On today's harness the fast 503s were in the percentiles: p50 about 0 ms here."""
    server = await asyncio.start_server(_server, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    args = argparse.Namespace(
        url=f"http://127.0.0.1:{port}/v1/transfers",
        method="POST",
        header=["Content-Type: application/json"],
        body="{}",
        unique=True,
        duration=1.0,
        connections=1,
        rate=0,
        grace=5.0,
        wallet_ids=[],
        hot=0.0,
    )
    try:
        fig = await load.run(args)
    finally:
        server.close()
    assert fig["ok"] >= 1 and fig["ok"] == fig["requests"] // 10
    assert fig["refused"] == fig["requests"] - fig["ok"]
    assert fig["p50_ms"] >= 100.0  # every 2xx waited the server's 100 ms
    assert fig["failed"] == 0 and fig["failed_by_reason"] == {}
