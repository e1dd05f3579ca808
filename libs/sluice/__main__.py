"""``python -m sluice <command>``: the production image's command line (the Dockerfile, compose
and deploy/k8s call it). The development tooling (``make run``, ``make bench``, ``make chaos``)
is not here: it lives in tools/ and is not in the image.

- ``migrate [service ...]``: apply migrations to ``SLUICE_DATABASE_URL`` (all services by
  default); the production image runs this before the services start.
- ``roles``: create the database roles, one per service and the migrations role, as a
  superuser (``common.privileges``); ``migrate`` then grants each its own schema.
- ``serve <service>``: run one service (same as ``python -m <service>``).
- ``topics``: create or check every topic (partitions, replication, retention from settings);
  exit 1 when a topic's partition count differs from the setting (``common.provision``).
- ``acls [--dry-run]``: create every service principal's Kafka ACLs (``common.acls.plan``), as
  the configured principal (a super user); ``--dry-run`` prints them and connects to nothing.
- ``keys [--verify]``: new Ed25519 signing keys for compliance, admin and the ledger and the journal's
  anchor key, and the verification keys for them (docs/security.md,
  "Round 5: no single point of trust"), as ``NAME=value`` lines; ``--verify`` prints only the
  verification keys of the signing keys in the environment (for a rotation).
- ``valkey-acl``: Valkey's ACL file for the service users, passwords hashed.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sluice import MIGRATED, SERVICES

if TYPE_CHECKING:
    from common.settings import Settings


def _setting(name: str) -> str:
    """``name`` from the environment, else from its file in ``SLUICE_SECRETS_DIR`` (deploy/k8s
    mounts each pod's database URL there), else ""."""
    from common.settings import secrets_dir

    value = os.environ.get(name, "")
    directory = secrets_dir(os.environ)
    if not value and directory is not None and (directory / name).is_file():
        value = (directory / name).read_text().strip()
    return value


def migrate(services: Sequence[str], url: str | None = None) -> int:
    """Each service's migrations, then its grants (common.privileges): run as the migrations
    role, which owns what it grants; a service role that does not exist is named and skipped."""
    from common.db import migrate as upgrade
    from common.logging import setup_logging
    from common.privileges import DEFAULT_PREFIX, ROLE_PREFIX_SETTING, grant

    setup_logging("migrate")
    url = url or _setting("SLUICE_DATABASE_URL")
    if not url:
        print("SLUICE_DATABASE_URL is not set", file=sys.stderr)
        return 2
    prefix = os.environ.get(ROLE_PREFIX_SETTING, "") or DEFAULT_PREFIX
    for svc in services:
        started = time.monotonic()
        upgrade(svc, url)
        absent = grant(svc, url, prefix)
        print(f"  migrated {svc:<11} {time.monotonic() - started:5.2f}s", flush=True)
        if absent:
            print(f"  no role {', '.join(absent)}: not granted (python -m sluice roles)", flush=True)
    return 0


def roles() -> int:
    """Create (or re-password) the database roles (common.privileges.bootstrap), connected as
    a superuser by ``SLUICE_DATABASE_URL``; each role's password from
    ``SLUICE_DATABASE_PASSWORD_<WHO>`` (``..._GATEWAY``, ..., ``..._MIGRATIONS``)."""
    from sqlalchemy.engine import make_url

    from common.privileges import DEFAULT_PREFIX, ROLE_PREFIX_SETTING, bootstrap, role_names

    url = _setting("SLUICE_DATABASE_URL")
    prefix = os.environ.get(ROLE_PREFIX_SETTING, "") or DEFAULT_PREFIX
    names = {who: f"SLUICE_DATABASE_PASSWORD_{who.upper()}" for who in role_names(prefix)}
    missing = [n for n in names.values() if not _setting(n)] + ([] if url else ["SLUICE_DATABASE_URL"])
    if missing:
        print(f"set {', '.join(missing)}", file=sys.stderr)
        return 2
    bootstrap(url, make_url(url).database or "", prefix, {who: _setting(n) for who, n in names.items()})
    print(f"  roles {', '.join(role_names(prefix).values())}", flush=True)
    return 0


def valkey_acl() -> int:
    """Print Valkey's ACL file (common.valkey_acl): the default user and one user per service
    that uses Valkey, each password from ``SLUICE_REDIS_PASSWORD_<WHO>`` (``..._DEFAULT``,
    ``..._GATEWAY``, ``..._ADMIN``) and written only as its SHA-256. For deploy/k8s's Secret
    sluice-valkey-acl (key users.acl) or any Valkey's ``aclfile``."""
    from common.valkey_acl import VALKEY_USERS, acl_file

    names = {who: f"SLUICE_REDIS_PASSWORD_{who.upper()}" for who in ("default", *VALKEY_USERS)}
    missing = [n for n in names.values() if len(_setting(n)) < 16]
    if missing:
        print(f"set {', '.join(missing)} (16 or more characters each)", file=sys.stderr)
        return 2
    passwords = {who: _setting(n) for who, n in names.items()}
    print(acl_file(passwords.pop("default"), passwords), end="")
    return 0


def _broker_settings() -> Settings:
    """The settings of a command that talks to the broker only (``topics``, ``acls``). Not
    ``load_settings``: that requires a service's secrets, and an operator making topics or ACLs
    in production must not need to hold them."""
    from common.settings import Settings, secrets_dir

    return Settings(_secrets_dir=secrets_dir(os.environ))  # type: ignore[call-arg]  # upstream: pydantic mypy plugin


def _kafka_refused(command: str, settings: Settings) -> bool:
    """Print what is wrong with the Kafka client settings, if anything (exit status 2 then)."""
    from common import kafka

    broken = kafka.problems(settings)
    if broken:
        print(f"sluice {command}: Kafka client settings: " + "; ".join(broken), file=sys.stderr)
    return bool(broken)


def topics() -> int:
    import asyncio

    from common.provision import provision

    settings = _broker_settings()
    if _kafka_refused("topics", settings):
        return 2
    status, lines = asyncio.run(provision(settings))
    for line in lines:
        print(line, flush=True)
    return status


def acls(dry_run: bool) -> int:
    import asyncio

    from common import kafka
    from common.acls import apply, bindings, plan

    settings = _broker_settings()  # this Job holds the Kafka super user's password, nothing else
    wanted = list(bindings(plan(settings.topic_prefix)))
    for b in wanted:
        print(b, flush=True)
    if dry_run:
        return 0
    if _kafka_refused("acls", settings):
        return 2
    failed = asyncio.run(apply(wanted, **kafka.client_args(settings)))
    for line in failed:
        print(f"refused: {line}", file=sys.stderr, flush=True)
    return 1 if failed else 0


def keys(verify_only: bool) -> int:
    """Print signing and verification keys (never logged: standard output only)."""
    from common import authority

    if verify_only:
        names = ("SLUICE_COMPLIANCE_SIGNING_KEY", "SLUICE_ADMIN_SIGNING_KEY", "SLUICE_LEDGER_SIGNING_KEY")
        given = [os.environ.get(n, "") for n in names]
        anchor = os.environ.get("SLUICE_JOURNAL_ANCHOR_KEY", "")
        try:
            print(f"SLUICE_AUTHORITY_VERIFY_KEYS={authority.verify_setting(*[g for g in given if g])}")
            if anchor:
                print(f"SLUICE_JOURNAL_ANCHOR_VERIFY_KEYS={authority.public_settings_of(anchor)}")
        except authority.AuthorityError as exc:
            print(f"sluice keys: {exc}", file=sys.stderr)
            return 2
        return 0
    label = time.strftime("%Y%m%d")
    for name, value in {**authority.new_settings(label), **authority.new_anchor_settings(label)}.items():
        print(f"{name}={value}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sluice", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("migrate", help="apply migrations to SLUICE_DATABASE_URL")
    m.add_argument("services", nargs="*", metavar="service", help=f"default: all of {', '.join(MIGRATED)}")
    s = sub.add_parser("serve", help="run one service")
    s.add_argument("service", choices=SERVICES)
    sub.add_parser("topics", help="create or check every topic of the suite")
    sub.add_parser("roles", help="create the database roles (as a superuser; common.privileges)")
    a = sub.add_parser("acls", help="create every service principal's Kafka ACLs (common.acls)")
    a.add_argument("--dry-run", action="store_true", help="print them, connect to nothing")
    k = sub.add_parser(
        "keys",
        help="new signing keys (compliance, admin, ledger, journal anchors) and their verification keys",
    )
    k.add_argument(
        "--verify", action="store_true", help="the verification keys of the signing keys in the env"
    )
    sub.add_parser("valkey-acl", help="print Valkey's ACL file, passwords hashed (common.valkey_acl)")
    args = parser.parse_args(argv)
    if args.command == "migrate":
        unknown = set(args.services) - set(MIGRATED)
        if unknown:
            parser.error(f"unknown services {sorted(unknown)}; choose from {', '.join(MIGRATED)}")
        return migrate(args.services or list(MIGRATED))
    if args.command == "serve":
        sys.argv = [args.service]
        runpy.run_module(args.service, run_name="__main__", alter_sys=True)
        return 0
    if args.command == "topics":
        return topics()
    if args.command == "roles":
        return roles()
    if args.command == "acls":
        return acls(args.dry_run)
    if args.command == "keys":
        return keys(args.verify)
    return valkey_acl()


if __name__ == "__main__":
    sys.exit(main())
