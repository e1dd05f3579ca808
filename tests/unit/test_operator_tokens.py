"""Operator tokens and secret strength under mutation: which operator a token
is and with which role, what a refusal says, and where the strength rule's bounds lie.
Against real stores (the in-process tier): tests/inprocess/test_admin.py, test_security_authfail.py."""

from __future__ import annotations

import hashlib
import itertools
import math

import pytest

from admin.operators.tokens import (
    Operator,
    authenticate,
    authenticate_limited,
    authenticate_operator,
    parse_operators,
)
from common.errors import ServiceError
from common.secret_strength import (
    _entropy,
    split_operator,
    split_role,
    token_bits,
    weak_admin_tokens,
    weakness,
)

pytestmark = pytest.mark.unit

ANN = "Q9vT3kLmZr8xWp2NcY7hJd4sFg6bVa1Ue5RiOy0K"
BOB = "Zx1Cv2Bn3Mq4Wl5Er6Ty7Ui8Op9As0Df_Gh-Jk.L"


def refusal(operators: list[Operator], authorization: str | None) -> tuple[str, int, str]:
    with pytest.raises(ServiceError) as info:
        authenticate_operator(operators, authorization)
    return str(info.value.code), info.value.status, info.value.message


def test_each_entry_is_its_operator_with_its_role() -> None:
    ann, bob, bare = parse_operators([f"ann:viewer={ANN}", f"bob={BOB}", "tok" + ANN])
    assert (ann.name, ann.role, ann.digest) == ("ann", "viewer", hashlib.sha256(ANN.encode()).digest())
    assert (bob.name, bob.role) == ("bob", "approver")
    digest = hashlib.sha256(("tok" + ANN).encode()).digest()
    assert bare == Operator("operator-" + hashlib.sha256(digest).hexdigest()[:8], digest, "approver")


def test_the_token_presented_is_the_operator_it_names_not_the_first() -> None:
    operators = parse_operators([f"ann:operator={ANN}", f"bob:viewer={BOB}"])
    assert authenticate_operator(operators, f"Bearer {BOB}") is operators[1]
    assert authenticate_operator(operators, f"bearer {ANN}") is operators[0]
    assert authenticate(operators, f"BEARER  {BOB} ") == "bob"  # spaces around the token


def test_refusals_are_401_and_say_why() -> None:
    operators = parse_operators([f"ann={ANN}"])
    required = ("unauthorized", 401, "an operator bearer token is required")
    for header in (None, "", "Bearer", "Bearer   ", f"Basic {ANN}", ANN, f"Token {ANN}"):
        assert refusal(operators, header) == required, header
    assert refusal(operators, f"Bearer {BOB}") == ("unauthorized", 401, "invalid operator token")
    assert refusal([], f"Bearer {ANN}") == ("unauthorized", 401, "invalid operator token")


class Failures:
    """The FailureLimiter's two calls, recorded; ``check`` refuses past ``limit`` failures."""

    def __init__(self, limit: int = 2) -> None:
        self.calls: list[tuple[str, str | None]] = []
        self.failed = 0
        self.limit = limit

    async def check(self, address: str | None) -> None:
        self.calls.append(("check", address))
        if self.failed >= self.limit:
            raise ServiceError("rate_limited", "too many")  # type: ignore[arg-type]

    async def record(self, address: str | None) -> None:
        self.calls.append(("record", address))
        self.failed += 1


async def test_failures_are_counted_against_the_address_and_then_refused() -> None:
    operators = parse_operators([f"ann={ANN}", f"bob={BOB}"])
    failures = Failures()
    op = await authenticate_limited(failures, "10.0.0.1", operators, f"Bearer {BOB}")  # type: ignore[arg-type]
    assert op.name == "bob" and failures.calls == [("check", "10.0.0.1")]
    for _ in range(2):
        with pytest.raises(ServiceError) as info:
            await authenticate_limited(failures, "10.0.0.1", operators, "Bearer nope")  # type: ignore[arg-type]
        assert info.value.message == "invalid operator token"
    assert failures.calls[1:] == [("check", "10.0.0.1"), ("record", "10.0.0.1")] * 2
    with pytest.raises(ServiceError) as info:
        await authenticate_limited(failures, "10.0.0.1", operators, f"Bearer {ANN}")  # type: ignore[arg-type]
    assert info.value.message == "too many"  # refused before any token is compared


def test_a_role_is_split_off_its_entry() -> None:
    assert split_role(f"ann:viewer={ANN}") == (f"ann={ANN}", "viewer")
    assert split_role(f"bob:approver={BOB}") == (f"bob={BOB}", "approver")
    assert split_role(f"ann={ANN}") == (f"ann={ANN}", "approver")
    assert split_role(f"ann:owner={ANN}") == (f"ann:owner={ANN}", "approver")


def test_a_name_needs_a_token_beyond_padding() -> None:
    assert split_operator("ann=XXXX") == ("ann", "XXXX")
    assert split_operator("ann=x=") == ("ann", "x=")
    assert split_operator("ann===") == (None, "ann===")
    assert split_operator("9ann=tok") == (None, "9ann=tok")


def test_the_estimate_at_its_edges() -> None:
    assert _entropy([]) == 0.0
    assert token_bits("") == 0.0 and token_bits("a") == 0.0
    # the steps' term is the smaller: 3 steps (+1, -1, +1) of entropy H(1/3)
    h = -(1 / 3) * math.log2(1 / 3) - (2 / 3) * math.log2(2 / 3)
    assert token_bits("abab") == pytest.approx(3 * h)
    assert token_bits("abab") < 4 * 1.0


def test_the_bounds_are_inclusive() -> None:
    # 32 characters are long enough: a 32-character secret is refused only by its estimate
    # (32 distinct characters score at most 31 * log2(31) < 160 on their steps)
    assert weakness("Q9vT3kLmZr8xWp2NcY7hJd4sFg6bVa1U") == "too predictable (repeats, runs or words)"
    assert weakness("Q9vT3kLmZr8xWp2NcY7hJd4sFg6bVa1") == "shorter than 32 characters"
    # 80 characters, four symbols 20 times each: exactly 160 bits on its characters, more on
    # its steps; 160 is enough
    exact = "BAHHHDADAAAAAHDHAADBBBHBBBDBDBHHBAHADBADHDDDBDDHBDBHBDADHAAHBHBDABHHAHAHDAABDDHB"
    steps = [ord(b) - ord(a) for a, b in itertools.pairwise(exact)]
    assert token_bits(exact) == 160.0 and 79 * _entropy(steps) > 160
    assert weakness(exact) is None


def test_a_weak_bare_token_is_named_by_its_place_only() -> None:
    assert weak_admin_tokens(["short", f"ann:viewer={ANN}", "bob=" + "a" * 40]) == [
        "SLUICE_ADMIN_TOKEN (entry 1, a bare token: shorter than 32 characters; at least 32 random"
        " bytes, e.g. `openssl rand -base64 32`)",
        "SLUICE_ADMIN_TOKEN (entry 3, operator 'bob': too predictable (repeats, runs or words); at least"
        " 32 random bytes, e.g. `openssl rand -base64 32`)",
    ]
