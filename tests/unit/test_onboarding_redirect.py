"""``redirect_url`` of an onboarding authorization: every bad URL is a 400, never a 500.

The fuzzer found ``HTtPS://Ñ…K…Ì]ãÅ@>¹>(…:31070#…``: ``urlsplit`` raised "Invalid IPv6 URL"
out of the check and the gateway answered 500 (CI, seed 24911579)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.errors import ServiceError
from gateway.onboarding.links import check_redirect
from gateway.openapi.rules import REDIRECT_URL

FUZZED = "HTtPS://\u00d1\U0009a9d2K\U00021d67\u00cc]\u00e3\u00c5@>\u00b9>(\x05\x1d\U000cab89\x97J\U000d2c1e:31070#\u00b9"


@pytest.mark.parametrize(
    "url",
    [
        FUZZED,
        "https://partner.example.com]/done",
        "https://[::1/done",
        "https://partner.example.com:99999/done",
        "https://partner.example.com/a b",
        "https://partner.example.com/\r\nSet-Cookie: x=1",
        "https://user:pw@partner.example.com/done",
        "https://\udcff.example/done",
        "https://bücher.example/done",  # an international name goes in its xn-- form
        "https://a..b/done",
        "https://partner.example.com:/done",
        "http://partner.example.com/done",
        "ftp://partner.example.com/done",
        "https:///done",
    ],
)
def test_a_bad_redirect_url_is_refused_with_a_reason(url: str) -> None:
    with pytest.raises(ServiceError) as err:
        check_redirect(url)
    assert err.value.status == 400
    assert err.value.details["field"] == "redirect_url"


@pytest.mark.parametrize(
    "url",
    [
        "https://partner.example.com/onboarded?x=1",
        "HTTPS://Partner.Example.com:8443/done",
        "https://xn--bcher-kva.example/done",
        "https://partner.example.com/a]b?c=[d]#e",
        "http://localhost:3000/cb",
        "http://127.0.0.1/cb",
        "http://[::1]:8080/cb",
    ],
)
def test_a_good_redirect_url_passes_unchanged(url: str) -> None:
    assert check_redirect(url) == url
    parts = urlsplit(url)  # what the redirect does with it later cannot fail
    assert parts.port is None or 0 <= parts.port <= 65535
    (parts.hostname or "").encode("idna")


@settings(max_examples=500, deadline=None)
@given(st.from_regex(REDIRECT_URL, fullmatch=True))
def test_every_url_the_schema_calls_valid_is_accepted_and_usable(url: str) -> None:
    """The fuzzer's ST202 (a schema-valid redirect_url refused): the check and the pattern agree."""
    assert check_redirect(url) == url
    parts = urlsplit(url)
    assert parts.port is None or 0 <= parts.port <= 65535
    (parts.hostname or "").encode("idna")
