"""The expected secrets and database grants of each service (docs/security.md), written out here
and not imported from the code: a secret or a grant added there fails
tests/unit/test_least_privilege.py and tests/integration/test_least_privilege.py until this
table is changed too, in the same review."""

from __future__ import annotations

SERVICES = ("admin", "compliance", "gateway", "ledger", "webhooks")
SECRETS_OF: dict[str, set[str]] = {
    "gateway": {
        "SLUICE_JWT_SECRET",
        "SLUICE_ONBOARDING_SECRET",
        "SLUICE_ENCRYPTION_KEYS",
        "SLUICE_GATEWAY_CACHE_KEY",
    },
    "admin": {"SLUICE_ADMIN_TOKEN", "SLUICE_JWT_SECRET", "SLUICE_ADMIN_SIGNING_KEY"},
    "webhooks": {"SLUICE_ENCRYPTION_KEYS"},
    "ledger": {"SLUICE_JOURNAL_ANCHOR_KEY", "SLUICE_LEDGER_SIGNING_KEY"},
    "compliance": {"SLUICE_COMPLIANCE_SIGNING_KEY"},
}
EVERY_SECRET = set().union(*SECRETS_OF.values())
# Those every deployment and the test stack set (common.settings.SECRET_SETTINGS).
CORE_SECRETS = {
    "SLUICE_COMPLIANCE_SIGNING_KEY",
    "SLUICE_ADMIN_SIGNING_KEY",
    "SLUICE_LEDGER_SIGNING_KEY",
    "SLUICE_ADMIN_TOKEN",
    "SLUICE_JWT_SECRET",
    "SLUICE_ONBOARDING_SECRET",
    "SLUICE_ENCRYPTION_KEYS",
    "SLUICE_GATEWAY_CACHE_KEY",
}
SCHEMA_OF = {s: s for s in SERVICES} | {"admin": "identity"}
DML = {"SELECT", "INSERT", "UPDATE", "DELETE"}
# (schema, table) -> privileges where they differ from DML on the service's own schema:
# append-only tables, and the identity tables the gateway reads.
EXCEPTIONS: dict[str, dict[tuple[str, str], set[str]]] = {
    "admin": {("identity", "audit_log"): {"SELECT", "INSERT"}},
    "ledger": {
        ("ledger", "journal_entries"): {"SELECT", "INSERT"},
        ("ledger", "postings"): {"SELECT", "INSERT"},
    },
    "compliance": {("identity", "tenants"): {"SELECT"}},
    "webhooks": {("identity", "tenants"): {"SELECT"}},
    "gateway": {
        ("identity", "tenants"): {"SELECT"},
        ("identity", "api_keys"): {"SELECT"},
        ("identity", "access_tokens"): {"SELECT"},
    },
}


def expected_table_grants(service: str, schema: str, table: str) -> set[str]:
    special = EXCEPTIONS.get(service, {})
    if (schema, table) in special:
        return special[(schema, table)]
    if schema != SCHEMA_OF[service]:
        return set()
    return {"SELECT"} if table == "alembic_version" else DML


def expected_schemas(service: str) -> set[str]:
    return {SCHEMA_OF[service]} | {schema for schema, _ in EXCEPTIONS.get(service, {})}
