"""Which gateway, which key, which mode: sandbox (``sk_test_``) or live (``sk_live_``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from sluice_sdk.retry import RetryPolicy

Mode = Literal["sandbox", "live"]
_PREFIX: dict[str, str] = {"sandbox": "sk_test_", "live": "sk_live_"}
# The gateway's names for the two modes (the x-service-mode header).
GATEWAY_MODE: dict[str, str] = {"sandbox": "sandbox", "live": "production"}
DEFAULT_URL = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class Config:
    """``mode`` must match the key (``sk_test_`` is sandbox, ``sk_live_`` live), so a live key
    cannot be used by a process configured for the sandbox, or the reverse; every request also
    names the mode (``x-service-mode``) and the gateway refuses a key of the other mode.
    A JWT (issued by an operator) carries its own mode and is taken as given."""

    api_key: str
    base_url: str = DEFAULT_URL
    mode: Mode = "sandbox"
    timeout_s: float = 30.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def __post_init__(self) -> None:
        if self.mode not in _PREFIX:
            raise ValueError(f"mode must be 'sandbox' or 'live', not {self.mode!r}")
        if self.api_key.startswith("sk_"):
            wanted = _PREFIX[self.mode]
            if not self.api_key.startswith(wanted):
                raise ValueError(f"a {self.mode} client needs a {wanted}... key")
        elif not self.api_key:
            raise ValueError("api_key is empty")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Config:
        """``SLUICE_MODE`` (sandbox | live, default sandbox) picks ``SLUICE_SANDBOX_KEY`` or
        ``SLUICE_LIVE_KEY``; ``SLUICE_API_URL`` is the gateway (default 127.0.0.1:8000)."""
        env = os.environ if env is None else env
        mode = env.get("SLUICE_MODE", "sandbox")
        if mode not in _PREFIX:
            raise ValueError(f"SLUICE_MODE must be sandbox or live, not {mode!r}")
        name = "SLUICE_SANDBOX_KEY" if mode == "sandbox" else "SLUICE_LIVE_KEY"
        key = env.get(name)
        if not key:
            raise ValueError(f"{name} is not set")
        values: dict[str, object] = {
            "api_key": key,
            "base_url": env.get("SLUICE_API_URL", DEFAULT_URL),
            "mode": mode,
            **overrides,
        }
        return cls(**values)  # type: ignore[arg-type]
