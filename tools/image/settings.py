"""The settings compose.yaml takes, written from .env.example with fresh values.

.env.example names every variable compose.yaml interpolates (tests/unit/test_compose_env.py
keeps them equal); here each gets a fresh value of the kind its name says, as an operator
following the file's comments would make them. The signing keys come from the image's own
``python -m sluice keys``, the command the comments name.
"""

from __future__ import annotations

import re
import secrets
import subprocess  # the tools start local processes  # nosec B404
from pathlib import Path

from common.keyring import new_key_setting
from tools.image.podman import exe

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / ".env.example"
_NAME = re.compile(r"^([A-Z][A-Z0-9_]*)=", re.MULTILINE)


def example_names(text: str | None = None) -> list[str]:
    """The variables .env.example names, in its order."""
    return _NAME.findall(EXAMPLE.read_text() if text is None else text)


def compose_names(text: str) -> set[str]:
    """The variables a compose file interpolates (``${NAME...}``; ``$$`` is a literal dollar)."""
    return set(re.findall(r"(?<!\$)\$\{([A-Z][A-Z0-9_]*)", text))


def _password() -> str:
    return secrets.token_urlsafe(32)  # 32 random bytes: 43 characters of A-Z a-z 0-9 _ -


def signing_keys(image: str) -> dict[str, str]:
    """The five key lines of ``python -m sluice keys``, run in the image."""
    cmd = [exe("podman"), "run", "--rm", image, "keys"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout  # nosec B603
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def fresh(images: dict[str, str]) -> dict[str, str]:
    """A value for every name of .env.example."""
    keys = signing_keys(images["SLUICE_IMAGE"])
    values: dict[str, str] = {}
    for name in example_names():
        if name in images:
            values[name] = images[name]
        elif name in keys:
            values[name] = keys[name]
        elif name == "SLUICE_ADMIN_TOKEN":
            values[name] = f"alice:approver={_password()},bob:approver={_password()}"
        elif name in ("SLUICE_ENCRYPTION_KEYS", "SLUICE_GATEWAY_CACHE_KEY"):
            values[name] = new_key_setting("k1")
        elif "PASSWORD" in name or name.endswith("_SECRET"):
            values[name] = _password()
        else:
            raise KeyError(f".env.example names {name}, which tools.image.settings cannot fill")
    return values


def write(path: Path, values: dict[str, str]) -> None:
    path.touch(mode=0o600)
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
