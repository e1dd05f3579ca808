"""The in-process tier: the gateway and admin as Litestar apps (``create_app``) served through
Litestar's test client, compliance, the ledger and webhooks as their FastStream apps
(``create_app``: the same BatchProcessors), all in this pytest process, against a real
PostgreSQL (migrated as the stack's is) and a real Valkey, with Kafka replaced by the in-memory
:class:`tests.inprocess.bus.Bus` (docs/testing/index.md, "The in-process tier").

``stack`` here has the interface of the stack's (``tests.conftest.Stack``): the moved tests
call ``httpx`` with ``stack.gateway`` and ``stack.admin`` as they did, and those URLs name
apps in this process (``http://gateway-0.inprocess``), answered through the test client's
transport instead of a socket. Each service runs on an event loop of its own (a thread), as
each runs in a process of its own on the stack.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from litestar import Litestar
from litestar.testing import TestClient
from litestar.testing.transport import TestClientTransport

from common.settings import Settings, load_settings
from tests.conftest import LOOPBACK_PROXY, _base_env
from tests.inprocess.bus import Bus, patched
from tests.support.conformance import conformance_fixtures
from tools.stack.processes import free_port
from tools.stack.stores import Stores, drop_database
from tools.stack.suite import migrate, scoped_env

HOST = ".inprocess"
# The peer every request comes from, as on the stack (the tests' own loopback).
PEER = ("127.0.0.1", 50000)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.inprocess)


class Transport(TestClientTransport):  # type: ignore[type-arg]
    """The test client's transport, with the stack's peer address (loopback, not "testclient")
    and an async face that does not block the caller's loop while the app answers."""

    def parse_request(self, request: httpx.Request) -> dict[str, Any]:
        scope = super().parse_request(request)
        scope["client"] = PEER
        return scope


class AsyncTransport(httpx.AsyncBaseTransport):
    def __init__(self, sync: Transport) -> None:
        self.sync = sync

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        answer = await anyio.to_thread.run_sync(self.sync.handle_request, request)
        return httpx.Response(
            answer.status_code, headers=answer.headers, content=answer.read(), request=request
        )


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    """``env`` as the process environment (SLUICE_* only) while a service reads its settings."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("SLUICE_")}
    for k in saved:
        del os.environ[k]
    os.environ.update(env)
    try:
        yield
    finally:
        for k in env:
            os.environ.pop(k, None)
        os.environ.update(saved)


@dataclass
class Service:
    """One service in this process: its settings, its loop (a portal) and, for the HTTP ones,
    its test client. ``url`` and ``port`` stand where a process's are on the stack."""

    name: str
    instance: str
    settings: Settings
    app: Any
    portal: BlockingPortal | None = None
    client: TestClient[Litestar] | None = None
    exits: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://{self.instance}{HOST}"


class Suite:
    """``tools.stack.suite.Suite``'s ``start``/``wait_ready``/``stop_proc`` for services in this
    process: a test that starts a gateway or an admin of its own gets one here."""

    def __init__(self, env: dict[str, str], bus: Bus) -> None:
        self.env = env
        self.bus = bus
        self.services: dict[str, Service] = {}

    def settings_for(self, name: str, instance: str, extra: dict[str, str] | None) -> Settings:
        env = scoped_env(name, {**self.env, **(extra or {})})
        env["SLUICE_INSTANCE_ID"] = instance
        if name == "gateway":
            env["SLUICE_GATEWAY_METRICS_PORT"] = str(free_port())
        with _environment(env):
            return load_settings(name)

    def start(
        self,
        name: str,
        port: int | None = None,
        extra: dict[str, str] | None = None,
        instance: str | None = None,
    ) -> Service:
        instance = instance or name
        settings = self.settings_for(name, instance, extra)
        if name in ("gateway", "admin"):
            service = self._http(name, instance, settings)
        else:
            service = self._consumer(name, instance, settings)
        service.port = port or 0
        self.services[instance] = service
        return service

    def _http(self, name: str, instance: str, settings: Settings) -> Service:
        module = __import__(f"{name}.app", fromlist=["create_app"])
        app = module.create_app(settings)
        client: TestClient[Litestar] = TestClient(app, raise_server_exceptions=False, timeout=30)
        service = Service(name, instance, settings, app, client=client)
        service.exits.enter_context(client)
        return service

    def _consumer(self, name: str, instance: str, settings: Settings) -> Service:
        module = __import__(f"{name}.app", fromlist=["create_app"])
        exits = contextlib.ExitStack()
        portal = exits.enter_context(start_blocking_portal())

        async def start() -> Any:
            app = module.create_app(settings)  # subscribes on this loop (the bus's subscribe)
            await app.start()
            return app

        app = portal.call(start)
        exits.callback(portal.call, app.stop)
        return Service(name, instance, settings, app, portal=portal, exits=exits)

    def transport(self, host: str) -> Transport | None:
        service = self.services.get(host.removesuffix(HOST)) if host.endswith(HOST) else None
        if service is None or service.client is None:
            return None
        return Transport(service.client, raise_server_exceptions=False)

    def wait_ready(self, procs: Any = None, timeout: float = 0) -> None:
        """In process, a service is ready once ``start`` returned (its lifespan ran)."""

    def stop_proc(self, service: Service) -> None:
        self.services.pop(service.instance, None)
        service.exits.close()

    def stop(self) -> None:
        for service in reversed(list(self.services.values())):
            with contextlib.suppress(Exception):
                service.exits.close()
        self.services.clear()


@contextlib.contextmanager
def _routed(suite: Suite) -> Iterator[None]:
    """httpx's clients (``httpx.post``, ``httpx.Client``, ``httpx.AsyncClient``) answer a URL on
    ``*.inprocess`` through that service's test client; any other URL goes out as usual."""
    sync_pick = httpx.Client._transport_for_url
    async_pick = httpx.AsyncClient._transport_for_url

    def pick(self: httpx.Client, url: httpx.URL) -> httpx.BaseTransport:
        return suite.transport(url.host) or sync_pick(self, url)

    def async_pick_(self: httpx.AsyncClient, url: httpx.URL) -> httpx.AsyncBaseTransport:
        found = suite.transport(url.host)
        return AsyncTransport(found) if found is not None else async_pick(self, url)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(httpx.Client, "_transport_for_url", pick)
        mp.setattr(httpx.AsyncClient, "_transport_for_url", async_pick_)
        yield


@dataclass
class InProcessStack:
    """``tests.conftest.Stack`` for the in-process tier (see the module's docstring)."""

    stores: Stores
    suite: Suite
    env: dict[str, str]
    bus: Bus
    gateways: list[Service] = field(default_factory=list)
    ledgers: list[Service] = field(default_factory=list)
    procs: dict[str, Service] = field(default_factory=dict)

    @property
    def gateway(self) -> str:
        return self.gateways[0].url

    @property
    def admin(self) -> str:
        return self.procs["admin"].url

    def settings(self) -> Settings:
        return Settings(**{k[len("SLUICE_") :].lower(): v for k, v in self.env.items()})

    def admin_call(self, action: str, token: str | None = None, **fields: Any) -> httpx.Response:
        from tests.conftest import ADMIN_TOKEN

        return httpx.post(
            self.admin + "/",
            json={"action": action, **fields},
            headers={"Authorization": f"Bearer {token or ADMIN_TOKEN}"},
            timeout=30,
        )


@pytest.fixture(scope="package")
def stack(request: pytest.FixtureRequest) -> Iterator[InProcessStack]:
    """Package-scoped: the patches (the bus, httpx's routing) hold while this tier's files run
    and are gone before a worker of ``make test`` goes on to the stack's files, whose tests
    publish to and read from the real broker from this same process."""
    workdir = Path(tempfile.mkdtemp(prefix="sluice-test-inprocess-"))
    stores = Stores(workdir).start(kafka=False, database=f"sluice_inproc_{uuid.uuid4().hex[:10]}")
    bus = Bus()
    stores.kafka_bootstrap = bus.address  # never dialled: the bus carries the records
    env = _base_env(stores)
    suite = Suite(env, bus)
    stack = InProcessStack(stores, suite, env, bus)
    try:
        with patched(bus), _routed(suite):
            migrate(env)
            for name in ("compliance", "webhooks", "ledger"):
                stack.procs[name] = suite.start(name)
            stack.ledgers = [stack.procs["ledger"]]
            stack.procs["admin"] = suite.start("admin")
            stack.gateways = [suite.start("gateway", instance=f"gateway-{i}") for i in range(2)]
            yield stack
            suite.stop()
    finally:
        suite.stop()
        with contextlib.suppress(Exception):
            drop_database(stores.database_url)
        stores.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="package")
def proxied_gateway(stack: InProcessStack) -> Service:
    """``tests.conftest.proxied_gateway`` on this tier: a third gateway that trusts loopback as
    a proxy, with its own low authentication-failure limit."""
    extra = {"SLUICE_TRUSTED_PROXIES": LOOPBACK_PROXY, "SLUICE_AUTH_FAILURE_LIMIT_PER_MINUTE": "50"}
    return stack.suite.start("gateway", extra=extra, instance="gateway-proxied")


# Every answer a test receives from this tier's gateways conforms to the gateway's OpenAPI
# document, as on the stack (tests/integration/conftest.py, tests/support/conformance.py):
# the same recorder and checks, held for this package only, as the stack fixture is.
answer_recorder, answer_checker, answers_seen, answers_conform = conformance_fixtures("package")
