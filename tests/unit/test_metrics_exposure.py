"""Metrics off the partner port, and no tenant id as a label (docs/security.md, "Round 4").

Before, the gateway served ``/metrics`` on the partner port without credentials, and the
overload counter carried a ``tenant`` label (tenant ids disclosed to anyone, one series per
tenant). Now the gateway serves them on ``SLUICE_GATEWAY_METRICS_PORT`` only.
"""

from __future__ import annotations

import asyncio
import logging
import socket

import httpx
import pytest
from prometheus_client import REGISTRY

from common.http import serve_metrics
from common.settings import Settings
from gateway.app import create_app
from gateway.door.admission import Admission

pytestmark = pytest.mark.unit


def _paths(app: object) -> set[str]:
    return {route.path for route in app.routes}  # type: ignore[attr-defined]


def test_the_partner_port_serves_no_metrics() -> None:
    app = create_app(Settings(env="development"))
    paths = _paths(app)
    assert "/metrics" not in paths, sorted(paths)
    assert {"/healthz", "/readyz", "/v1/health"} <= paths  # the control: the rest is there


def test_the_overload_counter_names_no_tenant() -> None:
    tenant = "tenant-that-must-not-leak-7f3a"
    admission = Admission(1, 1, initial=1, min_limit=1)
    assert admission.admit(tenant) is None
    assert admission.admit(tenant) == "instance"
    families = [m for m in REGISTRY.collect() if m.name == "sluice_admission_shed"]
    assert families and {tuple(s.labels) for s in families[0].samples} <= {("reason",)}
    text = "".join(str(s) for m in REGISTRY.collect() for s in m.samples)
    assert tenant not in text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_metrics_are_served_on_their_own_port_while_the_block_runs() -> None:
    port = _free_port()
    async with serve_metrics("127.0.0.1", port), httpx.AsyncClient() as client:
        r = await client.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
        assert r.status_code == 200 and "sluice_admission_limit" in r.text
    with pytest.raises(httpx.ConnectError):
        await asyncio.to_thread(httpx.get, f"http://127.0.0.1:{port}/metrics", timeout=2)


async def test_a_taken_metrics_port_names_the_setting_to_change(caplog: pytest.LogCaptureFixture) -> None:
    """A second gateway on one host failed with only 'Application startup failed';
    the refusal now names SLUICE_GATEWAY_METRICS_PORT."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        with caplog.at_level(logging.CRITICAL), pytest.raises(OSError):
            async with serve_metrics("127.0.0.1", port):
                pass
    assert "SLUICE_GATEWAY_METRICS_PORT" in caplog.text and str(port) in caplog.text
