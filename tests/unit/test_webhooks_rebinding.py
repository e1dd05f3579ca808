"""Webhook targets checked live (docs/security.md, "Webhook targets: what is checked when"):
names answered by a real DNS server over UDP (tests/support/dns.py) that changes its answers
between registration and delivery, and real HTTP receivers on loopback that count every
connection. Nothing here replaces a function with one that returns the verdict.

The public address a name has "at registration" (93.184.215.14) is only ever vetted, never
connected to: the tests that refuse run with ``allow_private`` off and show that no connection
was opened anywhere; those that must reach a loopback receiver (the address connected to, the
redirects) run with it on, which changes the address check only."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from common.keyring import KeyRing, new_key_setting
from tests.support.dns import DnsResolver, DnsServer
from webhooks.delivery import attempt
from webhooks.repository import Claimed, Finished
from webhooks.sender import Outcome, Policy, Sender
from webhooks.signing import SecretBox
from webhooks.targets import TargetError, vet

pytestmark = pytest.mark.unit

PUBLIC = "93.184.215.14"  # vetted as public, never connected to
STRICT = Policy(schedule=(5, 300), jitter=0, timeout_s=5, disable_after_s=60, allow_private=False)
LOCAL = Policy(schedule=(5, 300), jitter=0, timeout_s=5, disable_after_s=60, allow_private=True)


@dataclass
class Receiver:
    """HTTP/1.1 on 127.0.0.1 and ::1 (one port): counts connections (before any TLS, so an
    ``https`` attempt counts too) and requests per path. ``/hook?status=N&to=URL`` answers N
    with ``Location: URL``; anything else 200."""

    connections: int = 0
    paths: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    servers: list[asyncio.Server] = field(default_factory=list)
    port: int = 0

    async def start(self) -> Receiver:
        for _ in range(10):  # the port the system gave on 127.0.0.1 may be taken on ::1
            v4 = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            self.port = int(v4.sockets[0].getsockname()[1])
            try:
                self.servers = [v4, await asyncio.start_server(self._serve, "::1", self.port)]
            except OSError:
                v4.close()
                await v4.wait_closed()
                continue
            return self
        raise RuntimeError("no port free on both 127.0.0.1 and ::1")

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, UnicodeDecodeError):
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            fields = (line.partition(":") for line in head.split("\r\n")[1:])
            headers = {k.strip().lower(): v.strip() for k, _, v in fields}
            await reader.readexactly(int(headers.get("content-length", "0")))
            path = head.split(" ", 2)[1]
            self.paths.append(path)
            self.hosts.append(headers.get("host", ""))
            writer.write(_answer(path))
            await writer.drain()
        writer.close()

    async def stop(self) -> None:
        for s in self.servers:
            s.close()
            await s.wait_closed()

    def hits(self, prefix: str) -> int:
        return sum(p.startswith(prefix) for p in self.paths)


def _answer(path: str) -> bytes:
    query = dict(p.split("=", 1) for p in path.partition("?")[2].split("&") if "=" in p)
    status = int(query.get("status", "200"))
    location = f"Location: {query['to']}\r\n" if "to" in query else ""
    return f"HTTP/1.1 {status} X\r\n{location}Content-Length: 0\r\nConnection: close\r\n\r\n".encode()


@pytest.fixture
async def dns() -> AsyncIterator[DnsServer]:
    server = await DnsServer().start()
    yield server
    server.stop()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    r = await Receiver().start()
    yield r
    await r.stop()


async def post(policy: Policy, dns: DnsServer, url: str) -> Outcome:
    sender = Sender(policy, resolver=DnsResolver(dns.port))
    try:
        return await sender.post(url, b"{}", {}, endpoint="we_test")
    finally:
        await sender.close()


def claimed(url: str, box: SecretBox) -> Claimed:
    return Claimed(
        "dl_test", "we_test", "ev_test", 1, 3, "pending", "worker", url,
        box.seal_secret("whsec_test", "we_test"), [], [], b"{}",
    )  # fmt: skip


async def deliver(policy: Policy, dns: DnsServer, url: str) -> Finished:
    """The delivery worker's own attempt (``delivery.attempt``): what it records."""
    box = SecretBox(KeyRing.parse(new_key_setting("k")))
    sender = Sender(policy, resolver=DnsResolver(dns.port))
    try:
        return await attempt(sender, box, claimed(url, box))
    finally:
        await sender.close()


PRIVATE_AT_DELIVERY = ["127.0.0.1", "10.0.0.1", "169.254.169.254", "::1", "::ffff:127.0.0.1"]


@pytest.mark.parametrize("private", PRIVATE_AT_DELIVERY)
async def test_a_name_rebound_to_a_private_address_is_refused_at_delivery(
    dns: DnsServer, receiver: Receiver, private: str
) -> None:
    url = f"https://rebind.test:{receiver.port}/hook"
    dns.answers["rebind.test"] = [PUBLIC]
    registered = await vet(url, False, DnsResolver(dns.port))  # accepted at registration
    assert registered.addresses == (PUBLIC,)
    dns.answers["rebind.test"] = [private]  # the owner of the name rebinds it
    done = await deliver(STRICT, dns, url)
    # Refused with its reason, before any connection: the loopback receiver (127.0.0.1 and ::1
    # on this port) saw none, and the attempt was not retried as a failure to connect.
    assert receiver.connections == 0
    assert (done.ok, done.status_code, done.error) == (False, None, "private_target")
    # Recorded as a failed attempt, the next due on the schedule, when it is vetted again.
    assert done.retry_in_s == STRICT.schedule[0]
    # The delivery asked the DNS server again (A and AAAA), after the registration did.
    assert dns.asked == [("rebind.test", "A"), ("rebind.test", "AAAA")] * 2


@pytest.mark.parametrize(
    "answers",
    [[PUBLIC, "127.0.0.1"], ["127.0.0.1", PUBLIC], [PUBLIC, "::1"], [PUBLIC, "::ffff:10.0.0.1"]],
    ids=["public-then-private-A", "private-then-public-A", "public-A-private-AAAA", "mapped-AAAA"],
)
async def test_one_private_answer_among_public_ones_is_refused(
    dns: DnsServer, receiver: Receiver, answers: list[str]
) -> None:
    """A name answering several addresses is refused if any is private, whichever family or
    place: the connection may go to any of them (the next one is tried when one fails)."""
    url = f"https://several.test:{receiver.port}/hook"
    dns.answers["several.test"] = answers
    with pytest.raises(TargetError) as refused:
        await vet(url, False, DnsResolver(dns.port))
    assert refused.value.reason == "private_target"
    out = await post(STRICT, dns, url)
    assert receiver.connections == 0
    assert (out.ok, out.status_code, out.error) == (False, None, "private_target")


async def test_the_connection_goes_to_the_vetted_answer_and_the_name_is_not_resolved_again(
    dns: DnsServer, receiver: Receiver
) -> None:
    """One lookup per attempt, the vetting one; the client connects to what it answered. The
    name exists only in this DNS server, so a client resolving it itself (the system's
    resolver) could not connect at all."""
    dns.answers["pinned.test"] = ["127.0.0.1"]
    out = await post(LOCAL, dns, f"http://pinned.test:{receiver.port}/hook")
    assert (out.status_code, out.error) == (200, None), out
    assert receiver.hosts == [f"pinned.test:{receiver.port}"]  # the name kept in Host
    assert dns.asked == [("pinned.test", "A"), ("pinned.test", "AAAA")]


REDIRECTS = [301, 302, 303, 307, 308]


@pytest.mark.parametrize("status", REDIRECTS)
@pytest.mark.parametrize("where", ["private", "public-looking"])
async def test_a_redirect_is_not_followed_and_is_a_failed_attempt(
    dns: DnsServer, receiver: Receiver, status: int, where: str
) -> None:
    landing = {
        "private": f"http://127.0.0.1:{receiver.port}/landed",
        "public-looking": f"https://hooks.example.com:{receiver.port}/landed",
    }[where]
    dns.answers["redirects.test"] = ["127.0.0.1"]
    url = f"http://redirects.test:{receiver.port}/hook?status={status}&to={landing}"
    done = await deliver(LOCAL, dns, url)
    assert receiver.hits("/landed") == 0 and receiver.hits("/hook") == 1
    assert (done.ok, done.status_code) == (False, status)
    assert done.error == f"http_{status}: redirect to {landing!r} not followed"
    assert done.retry_in_s == LOCAL.schedule[0]  # retried on the schedule, like a 5xx
