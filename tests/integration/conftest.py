"""Integration fixtures beside the session's stack (tests/conftest.py): every answer a test
receives from the stack's gateways conforms to the gateway's OpenAPI document, with no
undeclared property (tests/support/conformance.py). A test whose answers do not conform
fails at teardown, naming each such answer and what is wrong with it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import Stack
from tests.support.conformance import Checker, Operation, Recorder, answered, report


@pytest.fixture(scope="session")
def answer_recorder() -> Iterator[Recorder]:
    with Recorder().installed() as recorder:
        yield recorder


@pytest.fixture(scope="session")
def answer_checker(stack: Stack) -> Checker:
    """The document the gateway serves (GET /schema/openapi.json)."""
    r = httpx.get(stack.gateway + "/schema/openapi.json", timeout=30)
    assert r.status_code == 200, r.text[:300]
    return Checker(r.json())


@pytest.fixture(scope="session")
def answers_seen() -> dict[Operation, set[int]]:
    """Every documented operation's statuses answered in this session (this worker's)."""
    return {}


@pytest.fixture(autouse=True)
def answers_conform(request: pytest.FixtureRequest) -> Iterator[None]:
    if "stack" not in request.fixturenames:  # a test without the stack: nothing to hold
        yield
        return
    stack: Stack = request.getfixturevalue("stack")
    recorder: Recorder = request.getfixturevalue("answer_recorder")
    checker: Checker = request.getfixturevalue("answer_checker")
    seen: dict[Operation, set[int]] = request.getfixturevalue("answers_seen")
    recorder.register(*(g.url for g in stack.gateways))
    if "proxied_gateway" in request.fixturenames:
        recorder.register(request.getfixturevalue("proxied_gateway").url)
    yield
    answers = recorder.take()  # this test's and its fixtures' since the last test ended
    answered(checker, answers, seen)
    bad = report(checker, answers)
    if bad:
        pytest.fail(
            f"{len(bad)} answer(s) do not conform to the gateway's OpenAPI document:\n" + "\n".join(bad[:25]),
            pytrace=False,
        )
