"""Four eyes (docs/security.md, "no single point of trust"): admin refuses to start with four
eyes on and fewer than two approvers (a process's exit status and its log). The roles and the
second approver's approval: tests/inprocess/test_four_eyes.py."""

from __future__ import annotations

import secrets

import pytest

from tests.conftest import Stack
from tools.stack.processes import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TOKENS = {name: f"{name}-" + secrets.token_urlsafe(32) for name in ("watch", "ops", "alice", "bob")}


def test_admin_refuses_to_start_with_four_eyes_and_one_approver(stack: Stack) -> None:
    extra = {"SLUICE_ADMIN_FOUR_EYES": "true", "SLUICE_ADMIN_TOKEN": f"solo:approver={TOKENS['alice']}"}
    proc = stack.suite.start("admin", free_port(), extra, instance="admin-one-approver")
    try:
        assert proc.popen.wait(timeout=120) == 2
        assert "fewer than two approvers" in proc.log.read_text()
    finally:
        stack.suite.stop_proc(proc)
