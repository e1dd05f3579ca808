"""Following one request across the services (docs/operations.md, "Traces"): every message
the suite publishes carries the request id (``x-request-id``) and a W3C ``traceparent`` in its
Kafka headers, and every consumer's work on a message is a span of that message's trace.

FastStream's telemetry middleware gives a fetched *batch* one span that only links to its
messages, so a request's trace would end at the first consumer. The shared runtime carries it
on instead:

- :class:`MessageSpans` (used by :class:`common.consume.BatchProcessor`) opens one
  ``<consumer> process`` span per record, child of the record's ``traceparent``, for as long as
  the batch is being handled, and remembers it by the record's request id;
- :func:`publish` sends a message derived from a request under that request's remembered span,
  so the middleware's publish span, and the ``traceparent`` it writes, continue the trace.

The memory is bounded (the most recent requests); a message published by the outbox relay
after a restart starts a new trace but still carries its request id.

**Spans only when they are exported.** Without ``OTEL_EXPORTER_OTLP_ENDPOINT`` no span leaves
the process, yet building them (FastStream's telemetry middleware on every publish and consume,
a span per record, Litestar's server span) cost a fifth of each consumer's CPU in the transfers
profile. In that mode the suite still carries the request id and trace headers: the gateway
takes the caller's ``traceparent`` (or starts a trace id), each consumer remembers the
``traceparent`` of the records it reads by request id, and :func:`publish` writes the request id
and that ``traceparent`` straight to aiokafka's producer (FastStream's publish path, with its
middlewares, cost three times the producer's own work per message). Set the endpoint and every
span is made and exported as before.
"""

from __future__ import annotations

import os
import secrets
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from faststream.kafka import KafkaBroker
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from common.metrics import PRODUCED
from common.topics import Topic

REQUEST_ID_HEADER = "x-request-id"
_PROPAGATOR = TraceContextTextMapPropagator()
TRACEPARENT_HEADER = "traceparent"
_MAX_REMEMBERED = 20_000
_contexts: OrderedDict[str, Context] = OrderedDict()
_parents: OrderedDict[str, str] = OrderedDict()  # request id -> traceparent (spans not exported)


def exporting() -> bool:
    """Whether spans leave the process (``OTEL_EXPORTER_OTLP_ENDPOINT`` is set)."""
    return bool(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


_EXPORTING = exporting()


def _remember(request_id: str, ctx: Context) -> None:
    _contexts[request_id] = ctx
    _contexts.move_to_end(request_id)
    while len(_contexts) > _MAX_REMEMBERED:
        _contexts.popitem(last=False)


def remember_traceparent(request_id: str, traceparent: str) -> None:
    _parents[request_id] = traceparent
    if len(_parents) > _MAX_REMEMBERED:
        _parents.popitem(last=False)


def _valid_traceparent(value: str | None) -> bool:
    if not value or len(value) != 55:
        return False
    parts = value.split("-")
    return (
        len(parts) == 4
        and all(c in "0123456789abcdef" for c in value.replace("-", ""))
        and parts[1] != "0" * 32
        and parts[2] != "0" * 16
    )


def start_request(request_id: str, incoming: str | None) -> None:
    """At the edge, when spans are not exported: the request's ``traceparent`` is the caller's
    trace with a span id of ours, or a new trace (not sampled) when the caller sent none."""
    if _EXPORTING:
        return
    if _valid_traceparent(incoming):
        assert incoming is not None
        tp = f"00-{incoming[3:35]}-{secrets.token_hex(8)}-{incoming[53:55]}"
    else:
        tp = f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-00"
    remember_traceparent(request_id, tp)


def context_of(request_id: str | None) -> Context | None:
    """The trace context of a request this process has consumed recently, if any."""
    return _contexts.get(request_id) if request_id else None


class MessageSpans:
    """One consumer span per record of a batch, each in its own request's trace."""

    def __init__(self, consumer: str, records: Iterable[Any]) -> None:
        self.spans: list[Span] = []
        if not _EXPORTING:  # remember each request's traceparent, make no span
            for rec in records:
                rid = tp = None
                for k, v in getattr(rec, "headers", None) or ():
                    if k == REQUEST_ID_HEADER:
                        rid = v.decode("latin-1")
                    elif k == TRACEPARENT_HEADER:
                        tp = v.decode("latin-1")
                if rid and tp:
                    remember_traceparent(rid, tp)
            return
        tracer = trace.get_tracer("sluice.consume")
        start = time.time_ns()
        for rec in records:
            headers = {k: v.decode("latin-1") for k, v in (getattr(rec, "headers", None) or ()) if v}
            parent = _PROPAGATOR.extract(headers)
            request_id = headers.get(REQUEST_ID_HEADER)
            span = tracer.start_span(
                f"{consumer} process",
                context=parent,
                kind=SpanKind.CONSUMER,
                start_time=start,
                attributes={
                    "messaging.system": "kafka",
                    "messaging.destination.name": rec.topic,
                    "messaging.kafka.destination.partition": rec.partition,
                    "messaging.kafka.message.offset": rec.offset,
                    "sluice.request_id": request_id or "",
                },
            )
            self.spans.append(span)
            if request_id:
                _remember(request_id, trace.set_span_in_context(span, parent))

    def end(self) -> None:
        end = time.time_ns()
        for span in self.spans:
            span.end(end)


def _producer(broker: KafkaBroker) -> Any:
    """The broker's own aiokafka producer (one connection and one accumulator per process).
    FastStream exposes it only through its producer state object, hence the attribute walk."""
    state: Any = broker.config.producer  # AioKafkaFastProducerImpl: its state holds aiokafka's producer
    return state._producer.producer  # noqa: SLF001 - no public accessor in FastStream 0.7


async def publish(
    broker: KafkaBroker,
    payload: bytes,
    *,
    topic: str,
    key: bytes | None = None,
    partition: int | None = None,
    request_id: str | None = None,
    anchor: bool = False,
) -> None:
    """Publish with the request id in the headers, under the request's trace when this process
    consumed it (else under the current span, e.g. the gateway's HTTP request span).

    When spans are not exported, the record goes to aiokafka's producer directly with the
    request id and its remembered ``traceparent``; concurrent calls (``asyncio.gather``) land
    in one produce request per partition.

    The journal's anchors topic is refused unless ``anchor`` (the anchor publisher alone says
    so): the ledger's principal may write it, so no other path of the ledger's code may reach
    it, an answer or an outbox row included (docs/security.md, "Transfer ids, live and
    replies")."""
    if topic.endswith(f".{Topic.JOURNAL_ANCHORS.value}") and not anchor:
        raise PermissionError(f"only the anchor publisher writes {topic}")
    if not _EXPORTING:
        headers: list[tuple[str, bytes]] = []
        if request_id:
            headers.append((REQUEST_ID_HEADER, request_id.encode()))
            tp = _parents.get(request_id)
            if tp:
                headers.append((TRACEPARENT_HEADER, tp.encode()))
        producer = _producer(broker)
        sent = await producer.send(topic, payload, key=key, partition=partition, headers=headers)
        await sent
        PRODUCED.labels(topic.split(".replies.", 1)[0] + ".replies" if ".replies." in topic else topic).inc()
        return
    ctx = context_of(request_id)
    token = otel_context.attach(ctx) if ctx is not None else None
    try:
        await broker.publish(
            payload,
            topic=topic,
            key=key,
            partition=partition,
            headers={REQUEST_ID_HEADER: request_id} if request_id else None,
        )
    finally:
        if token is not None:
            otel_context.detach(token)
