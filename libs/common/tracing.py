"""Following one request across the services (contract 12.5): every message the suite
publishes carries the request id (``x-request-id``) and a W3C ``traceparent`` in its Kafka
headers, and every consumer's work on a message is a span of that message's trace.

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
"""

from __future__ import annotations

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

REQUEST_ID_HEADER = "x-request-id"
_PROPAGATOR = TraceContextTextMapPropagator()
_MAX_REMEMBERED = 20_000
_contexts: OrderedDict[str, Context] = OrderedDict()


def _remember(request_id: str, ctx: Context) -> None:
    _contexts[request_id] = ctx
    _contexts.move_to_end(request_id)
    while len(_contexts) > _MAX_REMEMBERED:
        _contexts.popitem(last=False)


def context_of(request_id: str | None) -> Context | None:
    """The trace context of a request this process has consumed recently, if any."""
    return _contexts.get(request_id) if request_id else None


class MessageSpans:
    """One consumer span per record of a batch, each in its own request's trace."""

    def __init__(self, consumer: str, records: Iterable[Any]) -> None:
        tracer = trace.get_tracer("sluice.consume")
        self.spans: list[Span] = []
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


async def publish(
    broker: KafkaBroker,
    payload: bytes,
    *,
    topic: str,
    key: bytes | None = None,
    partition: int | None = None,
    request_id: str | None = None,
) -> None:
    """Publish with the request id in the headers, under the request's trace when this process
    consumed it (else under the current span, e.g. the gateway's HTTP request span)."""
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
