"""Every line every service writes is one JSON object with a millisecond, zoned timestamp, a
request id and a trace id field: uvicorn's loggers, library loggers and tracebacks included."""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider

from common.logging import JsonFormatter, request_id_var
from tests.conftest import ARTIFACTS, Stack, customer_body, make_tenant
from tools.stack.processes import ROOT, python_env

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)$")
FIELDS = {"ts", "level", "service", "logger", "msg", "request_id", "trace_id"}


def assert_json_lines(text: str, where: str) -> list[dict[str, Any]]:
    docs = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            pytest.fail(f"{where}:{n} is not JSON: {line[:300]!r}")
        assert isinstance(doc, dict), f"{where}:{n}: {line[:200]}"
        missing = FIELDS - set(doc)
        assert not missing, f"{where}:{n} lacks {missing}: {line[:300]}"
        assert TS.match(doc["ts"]), f"{where}:{n}: timestamp {doc['ts']!r}"
        docs.append(doc)
    return docs


def _format(record_msg: str, **extra: Any) -> dict[str, Any]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter("unit"))
    logger = logging.getLogger("tests.logs." + uuid.uuid4().hex)
    logger.propagate = False
    logger.addHandler(handler)
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception(record_msg, extra=extra)
    return json.loads(stream.getvalue())


@pytest.mark.unit
def test_formatter_carries_request_id_trace_id_and_traceback() -> None:
    tracer = TracerProvider().get_tracer("tests")
    token = request_id_var.set("req_abc")
    try:
        with tracer.start_as_current_span("work") as span:
            doc = _format("failed %s", order="o-1")
            ctx = span.get_span_context()
    finally:
        request_id_var.reset(token)
    assert doc["request_id"] == "req_abc"
    assert doc["trace_id"] == f"{ctx.trace_id:032x}" and doc["span_id"] == f"{ctx.span_id:016x}"
    assert doc["order"] == "o-1"  # extra= fields are kept
    assert "ValueError: boom" in doc["exc"] and "Traceback" in doc["exc"]
    assert TS.match(doc["ts"]) and doc["ts"].endswith("+00:00")
    outside = _format("no span")
    assert outside["trace_id"] is None and outside["request_id"] is None


@pytest.mark.integration
@pytest.mark.parametrize(
    "env",
    [
        {"SLUICE_ADMIN_PORT": "not-a-port"},  # settings refuse: an uncaught exception
        {"SLUICE_KAFKA_BOOTSTRAP": "127.0.0.1:1"},  # lifespan fails: uvicorn logs the traceback
    ],
    ids=["uncaught", "startup-failure"],
)
def test_failing_start_is_json(env: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "admin"],
        env=python_env({"SLUICE_ADMIN_PORT": "0", "SLUICE_ENV": "development", **env}),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert proc.stdout == ""
    docs = assert_json_lines(proc.stderr, "admin stderr")
    assert any("Traceback" in (d.get("exc", "") + d["msg"]) for d in docs), proc.stderr[-2000:]


@pytest.mark.integration
def test_every_service_log_line_is_json(stack: Stack) -> None:
    tenant = make_tenant(stack)
    assert tenant.post("/v1/customers", customer_body()).status_code == 201
    assert tenant.get("/v1/customers").status_code == 200
    assert tenant.get("/v1/nowhere").status_code == 404
    assert httpx.get(stack.gateway + "/v1/customers", timeout=10).status_code == 401
    assert stack.admin_call("no_such_action").status_code == 400
    for proc in stack.suite.procs:
        assert httpx.get(proc.url + "/readyz", timeout=10).status_code == 200
    logdir: Path = ARTIFACTS / "logs"
    files = sorted(logdir.glob("*.log"))
    ours = {p.log for p in stack.suite.procs}
    assert ours <= set(files) and len(ours) >= 5
    for path in files:
        assert_json_lines(path.read_text(errors="replace"), str(path))
    for proc in stack.suite.procs:
        docs = assert_json_lines(proc.log.read_text(errors="replace"), str(proc.log))
        # uvicorn's own start-up lines went through the JSON handler, not its text one.
        started = [d for d in docs if d["logger"] == "uvicorn.error" and "startup complete" in d["msg"]]
        assert started and started[0]["service"] == proc.name, proc.log
