"""The webhook sender against a real TLS server on loopback: it connects to the vetted address
and still verifies the certificate for the endpoint's name (SNI), keeps connections alive,
does not retry a certificate that does not verify, and drops a connection whose answer is too
long to read."""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from webhooks.sender import MAX_BODY, Policy, Sender

pytestmark = pytest.mark.unit

POLICY = Policy(schedule=(1,), jitter=0, timeout_s=5, disable_after_s=60, allow_private=True)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


Key = ec.EllipticCurvePrivateKey


def _key() -> Key:
    return ec.generate_private_key(ec.SECP256R1())


def _cert(subject: str, issuer: x509.Name, key: Key, signer: Key, ca: bool) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
    else:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False)
    return builder.sign(signer, hashes.SHA256())


@dataclass
class Pki:
    """A private CA and the client context that trusts it (and nothing else)."""

    dir: Path
    ca_key: Key = field(default_factory=_key)

    def __post_init__(self) -> None:
        self.ca = _cert("Sluice test CA", _name("Sluice test CA"), self.ca_key, self.ca_key, ca=True)

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.ca.public_bytes(serialization.Encoding.PEM).decode())

    def server_context(self, name: str) -> ssl.SSLContext:
        key = _key()
        cert = _cert(name, self.ca.subject, key, self.ca_key, ca=False)
        cert_file, key_file = self.dir / f"{name}.pem", self.dir / f"{name}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert_file, key_file)
        return ctx


@dataclass
class TlsServer:
    """An HTTP/1.1 keep-alive server on 127.0.0.1 that records handshakes (the SNI name of
    each), connections past the handshake and Host headers; answers 200 with ``answer``."""

    ctx: ssl.SSLContext | None  # None: plain HTTP
    answer: bytes = b"ok"
    hang: bytes = b""  # requests whose path starts with this are never answered
    connections: int = 0
    hanging: int = 0  # requests held unanswered (``hang``) so far
    hang_target: int = 0  # ``all_hung`` is set once this many are held
    all_hung: asyncio.Event = field(default_factory=asyncio.Event)
    names: list[str | None] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    server: asyncio.Server | None = None
    port: int = 0

    async def start(self) -> TlsServer:
        def sni(sock: ssl.SSLObject, name: str | None, _ctx: ssl.SSLContext) -> None:
            self.names.append(name)

        if self.ctx is not None:
            self.ctx.sni_callback = sni  # type: ignore[assignment]
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.ctx)
        self.port = int(self.server.sockets[0].getsockname()[1])
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if self.hang and head.split(b" ", 2)[1].startswith(self.hang):
                    self.hanging += 1
                    if self.hanging >= self.hang_target:
                        self.all_hung.set()
                    await asyncio.sleep(3600)
                fields = (line.partition(":") for line in head.decode("latin-1").split("\r\n")[1:])
                headers = {k.strip().lower(): v.strip() for k, _, v in fields}
                self.hosts.append(headers.get("host", ""))
                await reader.readexactly(int(headers.get("content-length", "0")))
                head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(self.answer)
                writer.write(head + self.answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki(tmp_path)


@pytest.fixture
async def sender(pki: Pki) -> AsyncIterator[Sender]:
    s = Sender(POLICY, ssl_context=pki.client_context())
    yield s
    await s.close()


async def test_tls_to_the_vetted_address_verifies_the_name_and_keeps_the_connection(
    pki: Pki, sender: Sender
) -> None:
    server = await TlsServer(pki.server_context("localhost")).start()
    try:
        url = f"https://localhost:{server.port}/hook"
        outcomes = [await sender.post(url, b'{"n":%d}' % i, {"x-test": "1"}) for i in range(20)]
    finally:
        await server.stop()
    assert [o.status_code for o in outcomes] == [200] * 20, outcomes[0]
    assert server.names[:1] == ["localhost"]  # SNI names the endpoint, not the address
    assert server.hosts == [f"localhost:{server.port}"] * 20
    assert server.connections == 1  # keep-alive


async def test_a_certificate_for_another_name_fails_once_and_is_not_retried(pki: Pki, sender: Sender) -> None:
    server = await TlsServer(pki.server_context("elsewhere.test")).start()
    try:
        out = await sender.post(f"https://localhost:{server.port}/hook", b"{}", {})
    finally:
        await server.stop()
    assert not out.ok and out.status_code is None
    assert out.error is not None and out.error.startswith("tls_failed: "), out.error
    # One handshake (the client refused the certificate: not retried), nothing was sent.
    assert server.names == ["localhost"] and server.connections == 0 and server.hosts == []


async def test_an_answer_too_long_to_read_closes_its_connection(pki: Pki, sender: Sender) -> None:
    server = await TlsServer(pki.server_context("localhost"), answer=b"x" * (4 * MAX_BODY)).start()
    try:
        url = f"https://localhost:{server.port}/hook"
        first = await sender.post(url, b"{}", {})
        second = await sender.post(url, b"{}", {})
    finally:
        await server.stop()
    assert (first.status_code, second.status_code) == (200, 200)
    assert server.connections == 2  # the first connection was not put back in the pool


async def test_endpoints_on_one_host_do_not_share_connections(sender: Sender) -> None:
    """32 requests of one endpoint hang on a host (its whole in-flight allowance); another
    endpoint on the same host and port is answered at once: pools are per endpoint."""
    server = await TlsServer(None, hang=b"/slow", hang_target=POLICY.per_endpoint).start()
    try:
        base = f"http://localhost:{server.port}"
        stuck = [
            asyncio.create_task(sender.post(f"{base}/slow", b"{}", {}, endpoint="we_slow"))
            for _ in range(POLICY.per_endpoint)
        ]
        await asyncio.wait_for(server.all_hung.wait(), 60)  # every slow request is held
        started = time.monotonic()
        fast = await sender.post(f"{base}/fast", b"{}", {}, endpoint="we_fast")
        took = time.monotonic() - started
        for t in stuck:
            t.cancel()
        await asyncio.gather(*stuck, return_exceptions=True)
    finally:
        await server.stop()
    # answered while the slow ones still hang: a shared pool would have made it wait for a
    # connection until their timeout (the bound is the setting, not this machine's speed)
    assert fast.status_code == 200 and took < POLICY.timeout_s, (fast, took)
    assert server.connections == POLICY.per_endpoint + 1
