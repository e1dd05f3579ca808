"""Integration fixtures beside the session's stack (tests/conftest.py): every answer a test
receives from the stack's gateways conforms to the gateway's OpenAPI document, with no
undeclared property (tests/support/conformance.py). A test whose answers do not conform
fails at teardown, naming each such answer and what is wrong with it. The in-process tier
holds its tests to the same (tests/inprocess/conftest.py)."""

from __future__ import annotations

from tests.support.conformance import conformance_fixtures

answer_recorder, answer_checker, answers_seen, answers_conform = conformance_fixtures("session")
