"""Structured logging: every line a process writes is one JSON object.

The root logger gets the only handler; every other logger (uvicorn's, FastStream's, aiokafka's,
SQLAlchemy's, asyncio's) propagates to it, so library lines are JSON too. Uvicorn must be
started with ``log_config=None`` (see :func:`common.service.serve`) or it installs its own
text handlers. Tracebacks travel inside the object (``exc``); an exception nobody catches
goes through ``sys.excepthook`` into the same handler, and ``warnings`` through logging.

Each object carries ``ts`` (ISO-8601, milliseconds, zone), ``level``, ``service``,
``instance``, ``logger``, ``msg``, ``request_id`` (the context variable the HTTP middleware
and the consumers bind, or an explicit ``extra={"request_id": ...}``) and ``trace_id`` /
``span_id`` (the current OpenTelemetry span, when there is a valid one; else ``null``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from contextvars import ContextVar
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from opentelemetry import trace

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)

# Attributes every LogRecord has; anything else came in through ``extra=`` and is kept.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",  # uvicorn: the same message with terminal colours
}
_QUIET = ("aiokafka", "faststream", "sqlalchemy.engine", "uvicorn.access", "httpx", "httpcore")


def current_trace() -> tuple[str | None, str | None]:
    """Hex trace and span ids of the current OpenTelemetry span, or ``(None, None)``."""
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None, None
    return trace.format_trace_id(ctx.trace_id), trace.format_span_id(ctx.span_id)


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str, instance: str = "") -> None:
        super().__init__()
        self.service = service
        self.instance = instance

    def format(self, record: logging.LogRecord) -> str:
        trace_id, span_id = current_trace()
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "service": self.service,
            "instance": self.instance,
            "logger": record.name,
            "msg": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or request_id_var.get(),
            "trace_id": getattr(record, "trace_id", None) or trace_id,
            "span_id": getattr(record, "span_id", None) or span_id,
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in out:
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def _log_uncaught(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, exc, tb)
        return
    logging.getLogger("uncaught").critical("uncaught exception", exc_info=(kind, exc, tb))


def _log_thread_uncaught(args: threading.ExceptHookArgs) -> None:
    name = args.thread.name if args.thread else "?"
    logging.getLogger("uncaught").critical(
        "uncaught exception in thread %s",
        name,
        exc_info=(args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback),
    )


def setup_logging(service: str, level: str | None = None) -> None:
    """Route everything through one JSON handler on stderr. Safe to call more than once."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service, os.environ.get("SLUICE_INSTANCE_ID", "")))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level or os.environ.get("SLUICE_LOG_LEVEL", "INFO").upper())
    # Libraries that configured their own handlers (uvicorn does when given a log config)
    # would write a second, text, copy: make every existing logger propagate to the root only.
    for logger in list(logging.Logger.manager.loggerDict.values()):
        if isinstance(logger, logging.Logger):
            logger.handlers[:] = []
            logger.propagate = True
    for noisy in _QUIET:
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught
    threading.excepthook = _log_thread_uncaught
