"""The product's command line, the one the image runs: ``python -m sluice <command>``."""

SERVICES = ("ledger", "compliance", "webhooks", "admin", "gateway")
# Migration order: identity (admin) first, the gateway's own tables last.
MIGRATED = ("admin", "compliance", "ledger", "webhooks", "gateway")
