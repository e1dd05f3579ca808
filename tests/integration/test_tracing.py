"""One request followed through every service by its trace id (docs/operations.md, "Traces").

A private suite (its own topic prefix, so its own consumer groups) exports spans over OTLP/HTTP
to a collector in this test. The request arrives with a W3C ``traceparent``; the gateway's
server span, the commands it publishes, compliance's and the ledger's work on them and the
webhooks service's work on the resulting event must all be spans of that one trace, and the
Kafka messages must carry the request id and a ``traceparent`` of that trace in their headers.
"""

from __future__ import annotations

import gzip
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from aiokafka import AIOKafkaConsumer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from common.topics import Topics
from tests.conftest import Stack, customer_body, make_tenant
from tests.support.compliance import uid
from tests.support.db import run_async
from tests.support.wait import eventually
from tools.stack.processes import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


class Collector:
    """An OTLP/HTTP trace receiver: (trace id, service name, span name) of every span."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                req = ExportTraceServiceRequest.FromString(body)
                with collector.lock:
                    for rs in req.resource_spans:
                        attrs = {a.key: a.value.string_value for a in rs.resource.attributes}
                        for ss in rs.scope_spans:
                            for span in ss.spans:
                                collector.spans.append(
                                    (span.trace_id.hex(), attrs.get("service.name", ""), span.name)
                                )
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def services_in(self, trace_id: str) -> set[str]:
        with self.lock:
            return {svc for t, svc, _ in self.spans if t == trace_id}


@pytest.fixture(scope="module")
def traced(stack: Stack) -> Iterator[tuple[Collector, str, str]]:
    collector = Collector()
    prefix = uid("trace")
    extra = {
        "SLUICE_TOPIC_PREFIX": prefix,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.port}",
        "OTEL_BSP_SCHEDULE_DELAY": "200",
    }
    procs = [
        stack.suite.start(name, free_port(), extra, instance=f"{name}-{prefix}")
        for name in ("compliance", "ledger", "webhooks", "gateway")
    ]
    try:
        stack.suite.wait_ready(procs, timeout=240)
        yield collector, prefix, procs[-1].url
    finally:
        for p in procs:
            stack.suite.stop_proc(p)
        collector.server.shutdown()


async def _headers_of(bootstrap: str, topic: str, request_id: str) -> dict[str, str]:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest", fetch_max_wait_ms=10
    )
    await consumer.start()
    try:
        for recs in (await consumer.getmany(timeout_ms=3000)).values():
            for r in recs:
                headers = {k: v.decode() for k, v in r.headers or ()}
                if headers.get("x-request-id") == request_id:
                    return headers
        return {}
    finally:
        await consumer.stop()


def test_one_request_is_one_trace_across_every_service(
    stack: Stack, traced: tuple[Collector, str, str]
) -> None:
    collector, prefix, gateway = traced
    tenant = make_tenant(stack)
    trace_id = secrets.token_hex(16)
    r = httpx.post(
        gateway + "/v1/customers",
        json=customer_body(),
        headers={
            **tenant.headers(secrets.token_hex(8)),
            "traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01",
        },
        timeout=30,
    )
    assert r.status_code == 201, r.text
    request_id = r.headers["x-request-id"]

    want = {"gateway", "compliance", "ledger", "webhooks"}

    def every_service_in_the_trace() -> set[str]:
        seen = {s.removeprefix("sluice-").split("-")[0] for s in collector.services_in(trace_id)}
        assert want <= seen, f"services in trace {trace_id}: {sorted(seen)}"
        return seen

    eventually(every_service_in_the_trace, timeout=30, interval=0.5)
    topics = Topics(prefix)
    for topic in (topics.compliance_commands, topics.ledger_commands, topics.events):
        headers = run_async(_headers_of(stack.stores.kafka_bootstrap, topic, request_id))
        assert headers.get("x-request-id") == request_id, (topic, headers)
        assert headers.get("traceparent", "").split("-")[1] == trace_id, (topic, headers)
