"""webhooks.targets under mutation: what an endpoint URL must be, what each
refusal says (``details.reason`` and the message a partner reads), and how a host's answers
are read. The resolver is the running loop's ``getaddrinfo``, replaced by a fake: no DNS."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from webhooks import targets
from webhooks.targets import MAX_URL_LENGTH, Target, TargetError, parse, vet

pytestmark = pytest.mark.unit


def refusal(url: Any, allow_private: bool = False) -> tuple[str, str]:
    with pytest.raises(TargetError) as info:
        parse(url, allow_private)
    assert str(info.value) == info.value.message
    return info.value.reason, info.value.message


def test_each_malformed_url_is_refused_with_its_reason() -> None:
    too_long = ("invalid_url", f"endpoint_url must be a URL of at most {MAX_URL_LENGTH} characters")
    assert refusal("") == too_long
    assert refusal(None) == too_long
    assert refusal("https://a.example/" + "x" * MAX_URL_LENGTH) == too_long
    assert refusal("https://[::1") == ("invalid_url", "endpoint_url is not a valid URL")
    assert refusal("https://a.example:99999/") == ("invalid_url", "endpoint_url is not a valid URL")
    assert refusal("ftp://a.example/") == ("invalid_url", "endpoint_url must be an http(s) URL")
    assert refusal("http://a.example/") == ("https_required", "endpoint_url must use https")
    credentials = ("invalid_url", "endpoint_url must not carry credentials")
    assert refusal("https://user@a.example/") == credentials
    assert refusal("https://user:pw@a.example/") == credentials
    assert refusal("https://:pw@a.example/") == credentials
    assert refusal("https:///path") == ("invalid_url", "endpoint_url must name a host")
    assert refusal("https://a.example/ x") == ("invalid_url", "endpoint_url must name a host")


def test_an_acceptable_url_gives_its_scheme_host_and_port() -> None:
    longest = "https://a.example/" + "x" * (MAX_URL_LENGTH - len("https://a.example/"))
    assert parse(longest, False) == ("https", "a.example", 443)
    assert parse("HTTPS://A.Example./hook", False) == ("https", "a.example", 443)
    assert parse("http://localhost/hook", True) == ("http", "localhost", 80)
    assert parse("http://localhost:8080/hook", True) == ("http", "localhost", 8080)
    assert parse("https://[::1]:8443/", True) == ("https", "::1", 8443)


class Resolver:
    """The loop's ``getaddrinfo``: answers per host, every question recorded."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, int, int]] = []

    async def __call__(self, host: str, port: int, *, type: int = 0) -> list[Any]:  # noqa: A002 - getaddrinfo's own name
        self.asked.append((host, port, type))
        if host not in self.answers:
            raise socket.gaierror("no such host")
        return [(socket.AF_INET6, type, 6, "", (a, port)) for a in self.answers[host]]


@pytest.fixture
async def resolver(monkeypatch: pytest.MonkeyPatch) -> Resolver:
    r = Resolver({})
    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", r)
    return r


async def test_a_name_is_resolved_once_per_address_without_its_zone(resolver: Resolver) -> None:
    resolver.answers["hooks.example"] = ["93.184.215.14", "fe80::1%eth0", "93.184.215.14", "fe80::1%eth1"]
    target = await vet("http://hooks.example:8080/h", True)
    assert target == Target(
        "http://hooks.example:8080/h", "http", "hooks.example", 8080, ("93.184.215.14", "fe80::1")
    )
    assert resolver.asked == [("hooks.example", 8080, socket.SOCK_STREAM)]
    resolver.answers["odd.example"] = ["fe80::2%a%b", "fe80::3 %x"]
    assert (await vet("http://odd.example/", True)).addresses == ("fe80::2", "fe80::3 ")


async def test_a_literal_address_is_not_resolved(resolver: Resolver) -> None:
    assert (await vet("https://93.184.215.14/h", False)).addresses == ("93.184.215.14",)
    assert (await vet("https://[2606:2800:0220:0001::]/h", False)).addresses == ("2606:2800:220:1::",)
    assert resolver.asked == []


async def test_a_host_that_does_not_resolve_is_refused(
    resolver: Resolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    unresolvable = ("unresolvable_host", "endpoint_url's host does not resolve")
    for host in ("nowhere.example", "empty.example"):
        resolver.answers.pop("nowhere.example", None)
        resolver.answers["empty.example"] = []
        with pytest.raises(TargetError) as info:
            await vet(f"https://{host}/h", False)
        assert (info.value.reason, info.value.message) == unresolvable

    async def never(host: str, port: int, *, type: int = 0) -> list[Any]:  # noqa: A002 - getaddrinfo's own name
        await asyncio.sleep(3600)
        return []

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", never)
    monkeypatch.setattr(targets, "RESOLVE_TIMEOUT_S", 0.01)
    with pytest.raises(TargetError) as info:  # the resolver's own deadline, not the test's
        await asyncio.wait_for(vet("https://slow.example/h", False), 5)
    assert (info.value.reason, info.value.message) == unresolvable


async def test_a_private_answer_is_refused_unless_allowed(resolver: Resolver) -> None:
    resolver.answers["mixed.example"] = ["93.184.215.14", "10.0.0.1"]
    with pytest.raises(TargetError) as info:
        await vet("https://mixed.example/h", False)
    assert (info.value.reason, info.value.message) == (
        "private_target",
        "endpoint_url resolves to a loopback, private, link-local or metadata address",
    )
    assert (await vet("https://mixed.example/h", True)).addresses == ("93.184.215.14", "10.0.0.1")
    # An answer that is not an address at all is not public either: refused, not waved through.
    resolver.answers["garbled.example"] = ["93.184.215.14", "not-an-address"]
    with pytest.raises(TargetError) as info:
        await vet("https://garbled.example/h", False)
    assert info.value.reason == "private_target"
