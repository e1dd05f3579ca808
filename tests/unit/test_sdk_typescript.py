"""The TypeScript SDK's layer (clients/typescript/test/unit, node --test): the same cases as
test_sdk_python.py against a scripted fetch."""

from __future__ import annotations

import pytest

from tests.support.node import node_test

pytestmark = pytest.mark.unit


def test_the_typescript_layer() -> None:
    report = node_test("test/unit")
    assert "one key per operation" in report and "webhook verification" in report
    assert "resources send typed bodies and return the inner object" in report  # test/unit/resources.test.ts
    assert "errors in words: after an outage the next call is sent, not throttled" in report  # errors.test.ts
