"""Secrets as mounted files (checkov CKV_K8S_35): deploy/k8s mounts the Secret
``sluice-secrets`` as files and points ``SLUICE_SECRETS_DIR`` at them; ``load_settings`` reads
each secret from the file named after its setting. Environment variables keep working (and win
over a file), so development and the tests are unchanged."""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

import pytest

from common.settings import SECRET_SETTINGS, load_settings, secrets_dir
from tests.support.secrets_env import production_env, strong_secrets

pytestmark = pytest.mark.unit


@pytest.fixture
def production(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    return production_env(monkeypatch)


def test_production_reads_every_secret_from_the_mounted_files(
    production: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    values = strong_secrets()
    assert sorted(values) == sorted(SECRET_SETTINGS.values())
    for name, value in values.items():
        (tmp_path / name).write_text(value + "\n")  # as `kubectl create secret --from-file` keeps it
    production.setenv("SLUICE_SECRETS_DIR", str(tmp_path))
    settings = load_settings()
    for attr, name in SECRET_SETTINGS.items():
        assert getattr(settings, attr).get_secret_value() == values[name]


def test_an_environment_variable_wins_over_a_file(production: pytest.MonkeyPatch, tmp_path: Path) -> None:
    values = strong_secrets()
    for name, value in values.items():
        (tmp_path / name).write_text(value)
    jwt = secrets.token_urlsafe(32)
    production.setenv("SLUICE_JWT_SECRET", jwt)
    production.setenv("SLUICE_SECRETS_DIR", str(tmp_path))
    assert load_settings().jwt_secret.get_secret_value() == jwt


def test_without_the_directory_the_environment_is_read(production: pytest.MonkeyPatch) -> None:
    for name, value in strong_secrets().items():
        production.setenv(name, value)
    assert secrets_dir(os.environ) is None
    assert load_settings().missing_secrets() == []


def test_a_missing_file_is_a_missing_secret(
    production: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    values = strong_secrets()
    del values["SLUICE_ONBOARDING_SECRET"]
    for name, value in values.items():
        (tmp_path / name).write_text(value)
    production.setenv("SLUICE_SECRETS_DIR", str(tmp_path))
    with caplog.at_level(logging.CRITICAL), pytest.raises(SystemExit) as done:
        load_settings()
    assert done.value.code == 2
    assert "SLUICE_ONBOARDING_SECRET" in caplog.text and "SLUICE_JWT_SECRET" not in caplog.text
    for value in values.values():
        assert value not in caplog.text


def test_a_directory_that_is_not_there_stops_the_start(
    production: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    production.setenv("SLUICE_SECRETS_DIR", str(tmp_path / "absent"))
    with caplog.at_level(logging.CRITICAL), pytest.raises(SystemExit) as done:
        load_settings()
    assert done.value.code == 2
    assert "SLUICE_SECRETS_DIR" in caplog.text
