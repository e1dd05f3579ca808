"""A real DNS server over UDP on loopback and a stub resolver that asks it, for the webhook
target tests (docs/security.md, "Webhook targets: what is checked when").

The server answers A and AAAA questions from ``answers`` (a name's addresses, either family,
changed by the test between questions: that is DNS rebinding) and records every question it
is asked. ``DnsResolver`` is a ``webhooks.targets.Resolver`` that sends one A and one AAAA
question per lookup to that server, as a system stub resolver would, and reads the answers
off the wire. Only the standard library: the wire format is RFC 1035 section 4 (AAAA: RFC 3596).
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import struct
from dataclasses import dataclass, field

A, AAAA = 1, 28
NXDOMAIN = 3
QTYPE_NAMES = {A: "A", AAAA: "AAAA"}


def _name(labels: str) -> bytes:
    return b"".join(bytes([len(part)]) + part.encode("ascii") for part in labels.split(".")) + b"\0"


def _read_name(wire: bytes, at: int) -> tuple[str, int]:
    """The name at ``at`` and the offset after it (compression pointers followed)."""
    labels: list[str] = []
    end = None
    for _ in range(128):  # a pointer loop ends here instead of spinning
        length = wire[at]
        if length & 0xC0 == 0xC0:
            end = at + 2 if end is None else end
            at = struct.unpack_from("!H", wire, at)[0] & 0x3FFF
            continue
        if length == 0:
            return ".".join(labels), (at + 1 if end is None else end)
        labels.append(wire[at + 1 : at + 1 + length].decode("ascii"))
        at += 1 + length
    raise ValueError("name too long or looping")


def query(qid: int, name: str, qtype: int) -> bytes:
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + _name(name) + struct.pack("!HH", qtype, 1)


def addresses_in(reply: bytes, qid: int, qtype: int) -> tuple[int, list[str]]:
    """(rcode, the addresses of type ``qtype``) of a reply to question ``qid``."""
    rid, flags, qdcount, ancount, _ns, _ar = struct.unpack_from("!HHHHHH", reply)
    if rid != qid or not flags & 0x8000:
        raise ValueError("not the answer to this question")
    at = 12
    for _ in range(qdcount):
        at = _read_name(reply, at)[1] + 4
    found: list[str] = []
    for _ in range(ancount):
        at = _read_name(reply, at)[1]
        rtype, _cls, _ttl, length = struct.unpack_from("!HHIH", reply, at)
        rdata = reply[at + 10 : at + 10 + length]
        at += 10 + length
        if rtype == qtype and len(rdata) in (4, 16):
            found.append(str(ipaddress.ip_address(rdata)))
    return flags & 0x000F, found


@dataclass
class DnsServer(asyncio.DatagramProtocol):
    """Answers from ``answers``; a name it does not hold is NXDOMAIN. ``asked`` holds every
    question as (name, "A" or "AAAA")."""

    answers: dict[str, list[str]] = field(default_factory=dict)
    asked: list[tuple[str, str]] = field(default_factory=list)
    port: int = 0
    transport: asyncio.DatagramTransport | None = None

    async def start(self) -> DnsServer:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(lambda: self, local_addr=("127.0.0.1", 0))
        self.transport = transport
        self.port = int(transport.get_extra_info("sockname")[1])
        return self

    def stop(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def datagram_received(self, data: bytes, addr: tuple[str | int, int]) -> None:
        qid = struct.unpack_from("!H", data)[0]
        name, at = _read_name(data, 12)
        qtype = struct.unpack_from("!H", data, at)[0]
        question = data[12 : at + 4]
        self.asked.append((name.lower(), QTYPE_NAMES.get(qtype, str(qtype))))
        held = self.answers.get(name.lower().rstrip("."))
        records = [ipaddress.ip_address(a).packed for a in held or ()]
        records = [r for r in records if len(r) == (4 if qtype == A else 16) and qtype in (A, AAAA)]
        rcode = NXDOMAIN if held is None else 0
        reply = struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, len(records), 0, 0) + question
        for r in records:  # the name as a pointer to the question's (offset 12), TTL 0
            reply += struct.pack("!HHHIH", 0xC00C, qtype, 1, 0, len(r)) + r
        assert self.transport is not None
        self.transport.sendto(reply, addr)


class _Reply(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.reply: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    def datagram_received(self, data: bytes, addr: tuple[str | int, int]) -> None:
        if not self.reply.done():
            self.reply.set_result(data)


@dataclass
class DnsResolver:
    """A stub resolver for one nameserver (127.0.0.1:``port``): A then AAAA, as getaddrinfo
    asks for both families."""

    port: int
    timeout_s: float = 2.0

    async def _ask(self, name: str, qtype: int) -> tuple[int, list[str]]:
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.create_datagram_endpoint(
            _Reply, remote_addr=("127.0.0.1", self.port), family=socket.AF_INET
        )
        try:
            qid = struct.unpack("!H", os.urandom(2))[0]
            transport.sendto(query(qid, name, qtype))
            reply = await asyncio.wait_for(protocol.reply, self.timeout_s)
            return addresses_in(reply, qid, qtype)
        finally:
            transport.close()

    async def addresses(self, host: str, port: int) -> list[str]:
        (rcode4, v4), (rcode6, v6) = await asyncio.gather(self._ask(host, A), self._ask(host, AAAA))
        if not v4 and not v6:
            raise socket.gaierror(socket.EAI_NONAME, f"{host}: rcode {max(rcode4, rcode6)}")
        return v4 + v6
