"""One TLS context for every short-lived httpx client of the tools and the tests.

httpx builds a fresh ``ssl.SSLContext`` (certifi's bundle parsed again) for every client, and
``httpx.get``/``httpx.post`` make a client per call: 42 ms of CPU each on the 2-core machine
(2026-11-28), against 1 ms with a shared context. The tests and the tools call the suite
thousands of times, mostly polling for readiness or a state on plain http:// over loopback, and
that alone kept the pytest process at half a core. An ``SSLContext`` is meant to be shared
between connections; the default one (verify with certifi's bundle, as httpx would) is built
once here and handed to every client that asks for the default. A client that asks for its own
verification (a path, ``False``, a context) gets exactly what it asked for.

Importing this module installs it; ``tools.stack`` imports it, so every tool and the tests
(which import ``tools.stack``) share the context. The product never imports it.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

from httpx._transports import default as _transports

_build = _transports.create_ssl_context


@functools.cache
def _default_context() -> ssl.SSLContext:
    return _build()


def _shared_default(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
    if verify is True and cert is None and trust_env:
        return _default_context()
    return _build(verify=verify, cert=cert, trust_env=trust_env)


def install() -> None:
    """Idempotent: the transports look the function up in their module at each client."""
    _transports.create_ssl_context = _shared_default  # type: ignore[assignment]


install()
