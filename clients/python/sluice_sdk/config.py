"""Which gateway, which key, which mode: sandbox (``sk_test_``) or live (``sk_live_``).

The mode comes from the credential: an API key's prefix, or a JWT's ``mode`` claim (read
without verifying the token: the gateway verifies it; the SDK only needs to know which rules
apply). A live client talks to its gateway over https, except on a loopback address."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from sluice_sdk.retry import RetryPolicy

Mode = Literal["sandbox", "live"]
_PREFIX: dict[str, str] = {"sandbox": "sk_test_", "live": "sk_live_"}
# The gateway's names for the two modes (the x-service-mode header, a JWT's mode claim).
GATEWAY_MODE: dict[str, str] = {"sandbox": "sandbox", "live": "production"}
_FROM_GATEWAY: dict[str, Mode] = {"sandbox": "sandbox", "production": "live", "live": "live"}
SANDBOX_URL = "http://127.0.0.1:8000"  # the sandbox default: a gateway on this machine


def credential_mode(api_key: str) -> Mode | None:
    """The mode an API key (``sk_test_``, ``sk_live_``) or a JWT (its ``mode`` claim, read
    without verification) is for; None when it says nothing."""
    if api_key.startswith(_PREFIX["sandbox"]):
        return "sandbox"
    if api_key.startswith(_PREFIX["live"]):
        return "live"
    parts = api_key.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None
    said = claims.get("mode") if isinstance(claims, dict) else None
    return _FROM_GATEWAY.get(said) if isinstance(said, str) else None


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_types(config: Config) -> None:
    """A clear TypeError for a field of the wrong type (before any of it is used)."""
    expected: dict[str, tuple[type, ...]] = {
        "api_key": (str,),
        "base_url": (str, type(None)),
        "mode": (str, type(None)),
        "timeout_s": (int, float),
        "retry": (RetryPolicy,),
        "throttle": (bool,),
    }
    for name, types in expected.items():
        value = getattr(config, name)
        if not isinstance(value, types) or (name == "timeout_s" and isinstance(value, bool)):
            wanted = " or ".join("None" if t is type(None) else t.__name__ for t in types)
            raise TypeError(f"Config.{name} must be {wanted}, not {type(value).__name__}")


@dataclass(frozen=True)
class Config:
    """``mode`` defaults to the credential's (``sk_test_`` sandbox, ``sk_live_`` live, a JWT's
    ``mode`` claim); given, it must agree, so a live key cannot be used by a process configured
    for the sandbox, or the reverse. Every request names the mode (``x-service-mode``) and the
    gateway refuses a credential of the other mode.

    ``base_url`` defaults to ``http://127.0.0.1:8000`` in the sandbox; a live client must name
    its gateway, over https unless it is a loopback address. ``timeout_s`` bounds each attempt
    (a whole operation: ``options={"timeout": ...}``). ``throttle=False`` switches the adaptive
    throttle off."""

    api_key: str
    base_url: str | None = None
    mode: Mode | None = None
    timeout_s: float = 30.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    throttle: bool = True

    def __post_init__(self) -> None:
        _check_types(self)
        if not self.api_key:
            raise ValueError("api_key is empty")
        if self.mode is not None and self.mode not in _PREFIX:
            raise ValueError(f"mode must be 'sandbox' or 'live', not {self.mode!r}")
        said = credential_mode(self.api_key)
        if self.mode is not None and said is not None and said != self.mode:
            wanted = _PREFIX[self.mode]
            raise ValueError(f"a {self.mode} client needs a {wanted}... key (this credential is {said})")
        mode: Mode = self.mode or said or "sandbox"
        object.__setattr__(self, "mode", mode)
        if self.base_url is None:
            if mode == "live":
                raise ValueError("a live client needs base_url: its gateway's https:// address")
            object.__setattr__(self, "base_url", SANDBOX_URL)
        url = urlsplit(str(self.base_url))
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base_url must be an http(s) URL, not {self.base_url!r}")
        if mode == "live" and url.scheme != "https" and not _loopback(url.hostname):
            raise ValueError(f"a live client sends its key over https only, not to {self.base_url}")

    @property
    def url(self) -> str:
        return str(self.base_url)

    @property
    def gateway_mode(self) -> str:
        return GATEWAY_MODE[str(self.mode)]

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Config:
        """``SLUICE_MODE`` (sandbox | live, default sandbox) picks ``SLUICE_SANDBOX_KEY`` or
        ``SLUICE_LIVE_KEY``; ``SLUICE_API_URL`` is the gateway (the sandbox's default:
        127.0.0.1:8000; live: required, https)."""
        env = os.environ if env is None else env
        mode = env.get("SLUICE_MODE", "sandbox")
        if mode not in _PREFIX:
            raise ValueError(f"SLUICE_MODE must be sandbox or live, not {mode!r}")
        name = "SLUICE_SANDBOX_KEY" if mode == "sandbox" else "SLUICE_LIVE_KEY"
        key = env.get(name)
        if not key:
            raise ValueError(f"{name} is not set")
        values: dict[str, object] = {"api_key": key, "base_url": env.get("SLUICE_API_URL"), "mode": mode}
        return cls(**{**values, **overrides})  # type: ignore[arg-type]
