"""OpenTelemetry tracing: one tracer provider per process, named after the service.

Spans are always made (so log lines and Kafka headers carry a trace id and a W3C
``traceparent``); they are exported over OTLP/HTTP only when ``OTEL_EXPORTER_OTLP_ENDPOINT``
is set (the exporter reads the standard ``OTEL_*`` variables), otherwise nothing leaves the
process.
"""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

_provider: TracerProvider | None = None


def tracer_provider(service: str) -> TracerProvider:
    global _provider
    if _provider is None:
        _provider = TracerProvider(resource=Resource.create({"service.name": f"sluice-{service}"}))
        if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            _provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(_provider)
    return _provider
