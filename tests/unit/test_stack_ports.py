"""The harness never gives one port to two processes, and never takes another service's
readiness for a process's own (make chaos, 2026-11-26: ledger-1 and gateway-1 were handed the
same port; the gateway could not bind, the ledger answered its /readyz, and the chaos clients'
transfers were answered 404 by the ledger)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tools.stack import processes, suite

pytestmark = pytest.mark.unit


class _Socket:
    """A socket whose ephemeral port comes from a script (the kernel may repeat one)."""

    ports: list[int] = []

    def __enter__(self) -> _Socket:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def bind(self, address: tuple[str, int]) -> None:
        self.port = _Socket.ports.pop(0)

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)


def test_a_port_the_kernel_gives_again_is_not_handed_out_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # one process, every port its own
    monkeypatch.setattr(processes, "_HANDED_OUT", set())
    monkeypatch.setattr(processes.socket, "socket", _Socket)
    _Socket.ports = [41000, 41000, 41000, 41001]
    assert [processes.free_port(), processes.free_port()] == [41000, 41001]


def test_two_test_workers_are_never_handed_the_same_port(monkeypatch: pytest.MonkeyPatch) -> None:
    """make test's workers each start a stack: a port is one worker's or the other's, and a
    kernel that hands bind() only odd ports (Linux does) starves neither."""
    handed: dict[str, list[int]] = {}
    odd = list(range(41001, 41201, 2))
    for worker in ("gw0", "gw1"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
        monkeypatch.setattr(processes, "_HANDED_OUT", set())
        monkeypatch.setattr(processes.socket, "socket", _Socket)
        _Socket.ports = list(odd)
        handed[worker] = [processes.free_port() for _ in range(20)]
    assert len(set(handed["gw0"])) == 20 and len(set(handed["gw1"])) == 20
    assert not set(handed["gw0"]) & set(handed["gw1"])


def proc(name: str) -> suite.Proc:
    done = subprocess.Popen(["true"])  # answers_ready reads the port only; a process that ended
    done.wait()
    return suite.Proc(name, 41000, done, Path("/dev/null"))


@pytest.mark.parametrize(
    ("status", "body", "ready"),
    [(200, {"service": "gateway"}, True), (503, {"service": "gateway"}, False)],
)
def test_ready_only_as_its_own_service(
    monkeypatch: pytest.MonkeyPatch, status: int, body: dict[str, Any], ready: bool
) -> None:
    monkeypatch.setattr(suite.httpx, "get", lambda url, timeout: httpx.Response(status, json=body))
    assert suite.answers_ready(proc("gateway")) is ready


def test_another_service_on_its_port_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    answer = httpx.Response(200, json={"status": "ready", "service": "ledger"})
    monkeypatch.setattr(suite.httpx, "get", lambda url, timeout: answer)
    with pytest.raises(RuntimeError, match="answered by 'ledger', not gateway"):
        suite.answers_ready(proc("gateway"))
