"""The errors guide says what the server does: its tables are generated from ``common.errors``
(tools/codegen/errors_page.py), and the services take each refusal's code from the same table.

A page edited by hand, or a table changed without `python -m tools.codegen.errors_page write`,
fails here; so does a service that answers a reason with another code than the table's.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from common.errors import (
    CODES,
    HTTP_STATUS,
    REASONS,
    ErrorCode,
    Reason,
    ServiceError,
    Unavailable,
    unavailable,
)
from tools.codegen import errors_page

pytestmark = pytest.mark.unit


def test_the_committed_errors_page_is_generated_from_the_tables() -> None:
    page = errors_page.PAGE.read_text()
    assert errors_page.render(page) == page, "run `python -m tools.codegen.errors_page write`"


def test_the_page_lists_every_code_and_reason_with_its_status() -> None:
    page = errors_page.PAGE.read_text()
    for code in ErrorCode:
        assert f"| `{code}` | {HTTP_STATUS[code]} |" in page
    for reason, row in REASONS.items():
        assert f"| `{reason}` | {HTTP_STATUS[row.code]} | `{row.code}` |" in page
    assert "| `insufficient_funds` | 400 | `invalid_request` |" in page


def test_every_named_reason_and_code_is_in_the_tables() -> None:
    assert set(CODES) == set(ErrorCode)
    assert {str(r) for r in (*Reason, *Unavailable)} <= set(REASONS)


def _compliance_answer(reason: str) -> Any:
    from compliance.rules import Verdict
    from compliance.service import refusal_result

    cmd: Any = SimpleNamespace(command_id="cmd_1", ctx=SimpleNamespace(request_id="req_1"))
    return refusal_result(cmd, Verdict("refuse", "a_rule", reason=reason, message="refused"))


@pytest.mark.parametrize("reason", [str(r) for r in Reason])
def test_compliance_answers_each_reason_with_the_tables_status(reason: str) -> None:
    result = _compliance_answer(reason)
    assert (result.error.code, result.status) == (REASONS[reason].code, HTTP_STATUS[REASONS[reason].code])


def test_the_gateway_and_the_ledger_refuse_with_the_tables_codes() -> None:
    from gateway.auth import require_mode, require_scope
    from ledger.core.entries import insufficient_funds

    principal: Any = SimpleNamespace(mode="sandbox", scopes=frozenset())
    refusals: list[ServiceError] = [insufficient_funds("w1", 5), *(unavailable(u, "x") for u in Unavailable)]
    for check, arg in ((require_mode, "production"), (require_scope, "transfers:write")):
        with pytest.raises(ServiceError) as info:
            check(principal, arg)
        refusals.append(info.value)
    for err in refusals:
        reason = err.details["reason"]
        assert (err.code, err.status) == (REASONS[reason].code, HTTP_STATUS[REASONS[reason].code]), reason
