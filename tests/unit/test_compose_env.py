"""compose.yaml's settings: .env.example names every variable compose.yaml interpolates (and no
other), each image is a variable whose default is today's registry image, and the settings
make compose-check writes fill every name with a value of its kind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tools.image import settings

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.unit


def test_env_example_names_exactly_what_compose_interpolates() -> None:
    compose = settings.compose_names((ROOT / "compose.yaml").read_text())
    example = settings.example_names()
    assert len(example) == len(set(example)), "a name twice in .env.example"
    assert set(example) == compose, {
        "only in compose.yaml": compose - set(example),
        "only in .env.example": set(example) - compose,
    }


def test_compose_names_reads_interpolations_not_literal_dollars() -> None:
    text = "a: ${ONE:?set ONE}\nb: ${TWO:-x}\nc: $${NOT_ONE}\nd: ${THREE}\n"
    assert settings.compose_names(text) == {"ONE", "TWO", "THREE"}


def test_every_image_is_a_variable_defaulting_to_the_registry_image() -> None:
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    defaults = {
        "SLUICE_IMAGE": "sluice:latest",
        "POSTGRES_IMAGE": "postgres:16-alpine",
        "REDIS_IMAGE": "redis:7-alpine",
        "KAFKA_IMAGE": "apache/kafka:4.1.2",
    }
    for name, svc in services.items():
        m = re.fullmatch(r"\$\{([A-Z_]+):-([^}]+)\}", svc["image"])
        assert m, f"{name}'s image is not a variable with a default: {svc['image']}"
        assert defaults[m.group(1)] == m.group(2), name


def test_fresh_settings_fill_every_name_with_its_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = {
        "SLUICE_COMPLIANCE_SIGNING_KEY": "c1:seed",
        "SLUICE_ADMIN_SIGNING_KEY": "a1:seed",
        "SLUICE_LEDGER_SIGNING_KEY": "l1:seed",
        "SLUICE_AUTHORITY_VERIFY_KEYS": "c1:pub,a1:pub,l1:pub",
        "SLUICE_JOURNAL_ANCHOR_KEY": "j1:seed",
        "SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS": "j1:pub",
    }
    monkeypatch.setattr(settings, "signing_keys", lambda image: keys)
    images = {"SLUICE_IMAGE": "s", "POSTGRES_IMAGE": "p", "REDIS_IMAGE": "r", "KAFKA_IMAGE": "k"}
    values = settings.fresh(images)
    assert set(values) == set(settings.example_names())
    assert all(values[k] == v for k, v in {**images, **keys}.items())
    secrets = [v for k, v in values.items() if k not in images and k not in keys]
    assert len(set(secrets)) == len(secrets), "a secret reused"
    assert all(len(v) >= 32 for v in secrets)
    approvers = [e.split("=", 1)[0] for e in values["SLUICE_ADMIN_TOKEN"].split(",")]
    assert approvers == ["alice:approver", "bob:approver"]


def test_a_name_of_unknown_kind_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings, "signing_keys", lambda image: {})
    monkeypatch.setattr(settings, "example_names", lambda text=None: ["SLUICE_SOMETHING_NEW"])
    with pytest.raises(KeyError, match="SLUICE_SOMETHING_NEW"):
        settings.fresh({"SLUICE_IMAGE": "s"})
