"""Several instances on one host: a service whose port another process holds stops
its start with one line naming the setting to change, and ``make run`` honours every port
setting (the gateway's metrics port included) and names the setting of a port already taken."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator

import pytest

from common.service import port_taken, refuse_taken_port
from tools.stack import run as devrun

pytestmark = pytest.mark.unit


@pytest.fixture
def held() -> Iterator[int]:
    """A port another process (here: this test) listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_held_port_stops_the_start_naming_its_setting(held: int, caplog: pytest.LogCaptureFixture) -> None:
    assert port_taken("127.0.0.1", held) is not None
    with caplog.at_level(logging.CRITICAL, logger="common.service"), pytest.raises(SystemExit) as info:
        refuse_taken_port("127.0.0.1", held, "SLUICE_GATEWAY_PORT")
    assert info.value.code == 2
    [line] = caplog.records
    assert f"127.0.0.1:{held}" in line.getMessage() and "SLUICE_GATEWAY_PORT" in line.getMessage()


def test_a_free_port_is_served() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert port_taken("127.0.0.1", port) is None
    refuse_taken_port("127.0.0.1", port, "SLUICE_LEDGER_PORT")  # no exit


def test_make_run_takes_every_port_from_its_setting() -> None:
    env = {
        "SLUICE_GATEWAY_PORT": "9000",
        "SLUICE_GATEWAY_METRICS_PORT": "9010",
        "SLUICE_ADMIN_PORT": "9001",
        "SLUICE_LEDGER_PORT": "9011",
        "SLUICE_COMPLIANCE_PORT": "9012",
        "SLUICE_WEBHOOKS_PORT": "9013",
    }
    ports = devrun.service_ports(env)
    assert dict(ports.values()) == {k: int(v) for k, v in env.items()}
    assert ports["gateway-metrics"] == ("SLUICE_GATEWAY_METRICS_PORT", 9010)


def test_make_run_defaults_are_the_settings_defaults() -> None:
    ports = devrun.service_ports({})
    assert {n: p for n, (_, p) in ports.items()} == {
        "ledger": 8011,
        "compliance": 8012,
        "webhooks": 8013,
        "admin": 8001,
        "gateway": 8000,
        "gateway-metrics": 8010,
    }


def test_make_run_names_the_setting_of_a_taken_port(held: int) -> None:
    problems = devrun.port_problems(devrun.service_ports({"SLUICE_GATEWAY_METRICS_PORT": str(held)}), {})
    [line] = [p for p in problems if "SLUICE_GATEWAY_METRICS_PORT" in p]  # (8000... may be busy here)
    assert f"127.0.0.1:{held}" in line


def test_make_run_refuses_two_settings_on_one_port() -> None:
    ports = devrun.service_ports({"SLUICE_ADMIN_PORT": "8000"})  # the gateway's default
    problems = devrun.port_problems(ports, {})
    assert any("SLUICE_ADMIN_PORT" in p and "SLUICE_GATEWAY_PORT" in p for p in problems), problems


def test_a_service_started_on_a_held_port_exits_naming_its_setting(held: int) -> None:
    """The whole start, as an operator runs it (``python -m ledger``): no store is reached
    before the port is checked, so none is needed here."""
    import json
    import subprocess
    import sys

    from tools.stack.processes import ROOT, python_env
    from tools.stack.suite import ephemeral_secrets, scoped_env

    env = scoped_env("ledger", {**ephemeral_secrets("t"), "SLUICE_LEDGER_PORT": str(held)})
    done = subprocess.run(  # our own service, argv list, no shell
        [sys.executable, "-m", "ledger"],
        env=python_env(env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    [critical] = [line for line in lines if line["level"] == "CRITICAL"]
    assert f"127.0.0.1:{held}" in critical["msg"] and "SLUICE_LEDGER_PORT" in critical["msg"]
