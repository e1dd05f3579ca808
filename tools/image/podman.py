"""podman on this kind of machine: installed from Debian's packages, and configured once.

No Docker engine and no registry here: Debian's podman and buildah build and run OCI images
as root. Two settings the sandbox needs (a drop-in file, so the machine's own
containers.conf is left alone): no default ulimits (raising RLIMIT_NOFILE/NPROC is refused,
and podman's defaults make every ``podman run`` fail) and runc as the runtime (crun refuses
the machine's hybrid cgroup v1/v2 layout). netavark and aardvark-dns give compose's
containers each other's names.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess  # the tools start local processes  # nosec B404
import time
from collections.abc import Iterable
from pathlib import Path

PACKAGES = ("podman", "buildah", "debootstrap", "runc", "netavark", "aardvark-dns", "podman-compose")
DROP_IN = Path("/etc/containers/containers.conf.d/sluice.conf")
SETTINGS = """# Written by tools/image (make image, make compose-check): see tools/image/podman.py.
[containers]
default_ulimits = []

[network]
network_backend = "netavark"

[engine]
runtime = "runc"
"""


def exe(name: str) -> str:
    """A program's absolute path (what apt-get installs lands in /usr/bin)."""
    return shutil.which(name) or f"/usr/bin/{name}"


class PodmanUnavailable(RuntimeError):
    """podman cannot be installed or configured here: says why in one line."""


def ensure_podman() -> None:
    """Install what is missing (as root, from Debian), then write the drop-in once."""
    missing = [p for p in PACKAGES if shutil.which(p) is None and not _installed(p)]
    if missing:
        if os.geteuid() != 0:
            raise PodmanUnavailable(f"install {' '.join(missing)} (apt-get, as root)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        cmd = [exe("apt-get"), "install", "-y", "-q", "--no-install-recommends", *missing]
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)  # nosec B603
    if not DROP_IN.exists() or DROP_IN.read_text() != SETTINGS:
        DROP_IN.parent.mkdir(parents=True, exist_ok=True)
        DROP_IN.write_text(SETTINGS)


def _installed(package: str) -> bool:
    done = subprocess.run(  # nosec B603
        [exe("dpkg-query"), "-W", "-f=${Status}", package], capture_output=True, text=True, check=False
    )
    return "install ok installed" in done.stdout


def podman(args: list[str]) -> str:
    """``podman <args>``; its output returned, or raised with its last lines."""
    done = subprocess.run([exe("podman"), *args], capture_output=True, text=True, check=False)  # nosec B603
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-8:]
        raise PodmanUnavailable(f"podman {args[0]} failed:\n" + "\n".join(tail))
    return done.stdout


def lines(args: list[str]) -> list[str]:
    """``podman <args>``'s non-empty output lines; a failure answers none (a listing or a
    clean-up that finds nothing to do)."""
    done = subprocess.run([exe("podman"), *args], capture_output=True, text=True, check=False)  # nosec B603
    return [line for line in done.stdout.splitlines() if line.strip()]


def missing_images(tags: Iterable[str]) -> list[str]:
    """The tags not in podman's local storage (``make image`` builds them)."""
    return [tag for tag in tags if not image_exists(tag)]


def image_exists(name: str) -> bool:
    done = subprocess.run([exe("podman"), "image", "exists", name], check=False)  # nosec B603
    return done.returncode == 0


def image_size(name: str) -> int:
    return int(json.loads(podman(["image", "inspect", name]))[0]["Size"])


class Socket:
    """podman's Docker-compatible API (what docker-compose and testcontainers talk to) on a
    socket of the caller's own, for its duration."""

    def __init__(self, work: Path) -> None:
        self.path = work / "podman.sock"
        self.url = f"unix://{self.path}"
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Socket:
        cmd = [exe("podman"), "system", "service", "--time=0", self.url]
        # its own session: an interrupt of the check must not stop it before the clean-up
        self._proc = subprocess.Popen(  # nosec B603
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + 30
        while not self.path.exists():
            if time.monotonic() > deadline or self._proc.poll() is not None:
                raise RuntimeError("podman system service did not open its socket")
            time.sleep(0.1)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=30)
