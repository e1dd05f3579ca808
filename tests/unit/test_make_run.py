"""make run: the addresses it prints name every service's /metrics (the gateway's on
its own port), and Ctrl-C stops the suite with no traceback, even when a second interrupt
arrives while the services and stores are being stopped."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tools.stack import run as devrun
from tools.stack.suite import Proc

pytestmark = pytest.mark.unit


def proc(name: str, port: int, metrics_port: int | None = None) -> Proc:
    popen: Any = None  # never started: only the addresses are read
    return Proc(name, port, popen, Path(f"{name}.log"), metrics_port)


def test_the_addresses_name_the_gateway_metrics_port() -> None:
    procs = [proc("ledger", 8011), proc("admin", 8001), proc("gateway", 8000, metrics_port=8010)]
    text = devrun.addresses(procs, "adm_x", "sk_test_y")
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith("  ") and line.split()}
    assert "http://127.0.0.1:8010/metrics" in lines["metrics"]
    assert "http://127.0.0.1:8000/metrics" not in text  # never on the partner port
    assert "ledger http://127.0.0.1:8011/metrics, admin http://127.0.0.1:8001/metrics" in text
    assert "http://127.0.0.1:8000 " in lines["gateway"] and "sk_test_y" in lines["sandbox"]


def test_an_interrupt_during_the_stop_does_not_break_it_off() -> None:
    # Python leaves SIGINT ignored when it started so (a shell's background job, as a CI runner
    # may start it); this test is about Ctrl-C at a terminal, so it starts from Python's handler.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _interrupt_during_stop()
    finally:
        signal.signal(signal.SIGINT, inherited)


def _interrupt_during_stop() -> None:
    stopped: list[str] = []

    def services() -> None:  # the terminal's second SIGINT arrives while services stop
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        stopped.append("services")

    devrun.stop_quietly(services, lambda: stopped.append("stores"))
    assert stopped == ["services", "stores"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    with pytest.raises(KeyboardInterrupt):  # and Ctrl-C works again afterwards
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)


def test_ctrl_c_at_any_step_ends_run_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted() -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(devrun, "_run", interrupted)
    assert devrun.run() == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err and "stopped" in out.out
