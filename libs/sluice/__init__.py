"""The suite's one command line: ``python -m sluice run | migrate | bench | chaos | serve``."""

SERVICES = ("ledger", "compliance", "webhooks", "admin", "gateway")
# Migration order: identity (admin) first, the gateway's own tables last.
MIGRATED = ("admin", "compliance", "ledger", "webhooks", "gateway")
