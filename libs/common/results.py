"""The answer to a command (:class:`common.contracts.Result`), built one way everywhere.

A success carries ``data`` and its HTTP status; a refusal is a :class:`common.errors.ServiceError`
rendered as the error body (code, message, details naming the reason).
"""

from __future__ import annotations

from typing import Any

from common.contracts import Envelope, Result
from common.contracts.base import ErrorBody
from common.errors import ServiceError


def ok_result(
    cmd: Envelope, data: Any = None, status: int = 200, sealed: dict[str, bytes] | None = None
) -> Result:
    """A success; ``sealed`` carries secrets apart from ``data`` (``Result.sealed``)."""
    return Result(
        command_id=cmd.command_id, request_id=cmd.ctx.request_id, status=status, data=data, sealed=sealed
    )


def error_result(cmd: Envelope, err: ServiceError) -> Result:
    return Result(
        command_id=cmd.command_id,
        request_id=cmd.ctx.request_id,
        status=err.status,
        error=ErrorBody(code=err.code, message=err.message, details=err.details),
    )
