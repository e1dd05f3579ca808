"""`make run` start-up: a store that cannot be reached is one line naming the setting, the
address and the error, at once and without a traceback."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.conftest import Stack
from tests.support.cli import run_module
from tools.stack.processes import ROOT, free_port, python_env
from tools.stack.stores import StoreUnreachable, check_configured
from tools.stack.suite import migrate

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("setting", "value", "address"),
    [
        (
            "SLUICE_DATABASE_URL",
            "postgresql+asyncpg://sluice:secret@127.0.0.1:{port}/sluice",
            "127.0.0.1:{port}",
        ),
        ("SLUICE_KAFKA_BOOTSTRAP", "127.0.0.1:{port}", "127.0.0.1:{port}"),
        ("SLUICE_REDIS_URL", "redis://127.0.0.1:{port}/0", "127.0.0.1:{port}"),
    ],
    ids=["database", "kafka", "redis"],
)
def test_unreachable_store_is_one_line(setting: str, value: str, address: str) -> None:
    port = free_port()  # nothing listens there
    env = python_env({setting: value.format(port=port), "SLUICE_ADMIN_TOKEN": "adm_startup_test"})
    started = time.monotonic()
    proc = run_module("tools.stack.run", env=env, cwd=ROOT, timeout=120)
    elapsed = time.monotonic() - started
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, proc.stderr
    assert setting in errors[0] and address.format(port=port) in errors[0], errors[0]
    assert "ConnectionRefusedError" in errors[0] or "refused" in errors[0].lower(), errors[0]
    assert "secret" not in proc.stdout + proc.stderr  # no credentials on screen
    assert "environment:" in proc.stdout and "stores: starting" in proc.stdout
    assert elapsed < 60  # before any embedded store or service is started


@pytest.mark.unit
def test_check_configured_names_the_setting() -> None:
    port = free_port()
    with pytest.raises(StoreUnreachable) as info:
        check_configured({"SLUICE_REDIS_URL": f"redis://127.0.0.1:{port}/0"})
    assert info.value.setting == "SLUICE_REDIS_URL" and info.value.address == f"127.0.0.1:{port}"
    check_configured({})  # nothing configured: nothing to probe


def test_make_run_shows_one_line_per_migrated_service_and_logs_the_rest(
    stack: Stack, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Migrations' JSON log lines go to the log file, not the console."""
    log = tmp_path / "migrate.log"
    migrate(stack.env, log)
    shown = [line for line in capfd.readouterr().out.splitlines() if line.strip()]
    assert shown and all(line.startswith("  migrated ") for line in shown), shown
    logged = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert logged and {entry["service"] for entry in logged} == {"migrate"}
