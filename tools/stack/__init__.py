"""The suite on one machine (README.md). Importing any of it shares one TLS context among the
short-lived httpx clients of the tools and the tests (tools.stack.http)."""

from tools.stack import http as _http  # noqa: F401  (installs the shared context)
