"""Integration fixtures beside the session's stack (tests/conftest.py): every answer a test
receives from the stack's gateways conforms to the gateway's OpenAPI document, with no
undeclared property (tests/support/conformance.py). A test whose answers do not conform
fails at teardown, naming each such answer and what is wrong with it. The in-process tier
holds its tests to the same (tests/inprocess/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import Stack
from tests.support.conformance import Checker, Operation, Recorder, hold_answers, served_checker


@pytest.fixture(scope="session")
def answer_recorder() -> Iterator[Recorder]:
    with Recorder().installed() as recorder:
        yield recorder


@pytest.fixture(scope="session")
def answer_checker(stack: Stack) -> Checker:
    """The document the gateway serves (GET /schema/openapi.json)."""
    return served_checker(stack.gateway)


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
    yield from hold_answers(request, [g.url for g in stack.gateways])
