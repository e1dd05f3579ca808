"""``make compose-check``: compose.yaml run for real under podman, and used as a partner would.

1. Up: compose.yaml as it ships (production mode, SASL and ACLs on the broker, a role per
   service), with the images ``make image`` built and settings written from .env.example;
   docker-compose (Debian's, the Compose Specification) drives podman's Docker-compatible
   socket. Every service must become healthy.
2. A partner: a tenant and a sandbox key from admin's API (an approver's token), a customer,
   two wallets and sandbox deposits, a webhook endpoint, one book transfer; its delivery is
   verified with the Python SDK's ``verify_webhook``.
3. A fault: transfers from eight clients, the ledger's container SIGKILLed a third of the way
   and started again; then nothing lost or duplicated: every accepted transfer completed
   exactly once (the two wallets' balances are the funding moved by exactly those transfers),
   no transfer decided twice, every completed transfer's event delivered and verified.
4. Down with the volumes, whatever happened.

The partner's endpoint is a container on a network of its own whose addresses are global
unicast (``PARTNER_SUBNET``, a range nothing here routes to the internet), with a certificate
from a certificate authority the check makes and gives the webhooks container alone
(``SSL_CERT_FILE``): production's rules for webhook targets (https, public addresses only)
stay on, as for a partner's real endpoint.

Health checks: podman runs them from systemd timers, and there is no systemd here, so the
check runs each container's health check itself every two seconds (``podman healthcheck
run``), which is what the timer would do.
"""

from __future__ import annotations

import asyncio
import os
import subprocess  # the tools start local processes  # nosec B404
import sys
import tempfile
import threading
import time
from pathlib import Path

from tools.image import certs, settings
from tools.image.__main__ import IMAGES, ROOT
from tools.image.partner import run_partner
from tools.image.podman import Socket, ensure_podman, exe, lines, missing_images

PROJECT = "sluicecheck"
PARTNER_SUBNET = "23.45.67.0/24"
RECEIVER_IP = "23.45.67.10"
RECEIVER_PORT = 8443
#: podman's filter for the project's containers (compose labels each with its project)
LABEL = f"label=com.docker.compose.project={PROJECT}"
UP_TIMEOUT_S = 600.0

OVERRIDE = """# make compose-check's additions (tools/image/compose_check.py): the partner's endpoint.
networks:
  partner:
    ipam:
      config: [{{subnet: "{subnet}"}}]
services:
  webhooks:
    networks: [default, partner]
    environment:
      SSL_CERT_FILE: /check/ca.pem
    volumes: ["{work}/ca.pem:/check/ca.pem:ro"]
  receiver:
    image: ${{SLUICE_IMAGE}}
    user: "0"
    entrypoint: ["python", "/check/receiver.py", "{port}"]
    networks: {{partner: {{ipv4_address: "{ip}"}}}}
    volumes: ["{work}:/check"]
    healthcheck: {{disable: true}}
    restart: "no"
"""


class HealthTicker(threading.Thread):
    """Runs every health check of the project's containers every two seconds."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(2.0):
            names = lines(["ps", "--filter", LABEL, "--format", "{{.Names}}"])
            for name in names:
                subprocess.run(  # nosec B603
                    [exe("podman"), "healthcheck", "run", name],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    check=False,
                )


class Compose:
    """docker-compose on compose.yaml and the override, against the check's socket."""

    def __init__(self, work: Path, socket: Socket) -> None:
        self.work = work
        self.files = ["-f", str(ROOT / "compose.yaml"), "-f", str(work / "override.yaml")]
        self.env = {**os.environ, "DOCKER_HOST": socket.url, "COMPOSE_HTTP_TIMEOUT": "600"}

    def __call__(self, *args: str, timeout: float = UP_TIMEOUT_S) -> None:
        cmd = [exe("docker-compose"), "--env-file", str(self.work / ".env"), "-p", PROJECT, *self.files]
        log = self.work / "compose.log"
        with open(log, "a") as out:
            done = subprocess.run(  # nosec B603
                [*cmd, *args], env=self.env, cwd=ROOT, stdout=out, stderr=out, check=False, timeout=timeout
            )
        if done.returncode != 0:
            tail = "\n".join(log.read_text().splitlines()[-25:])
            raise RuntimeError(f"docker-compose {args[0]} failed:\n{tail}")

    def container(self, service: str) -> str:
        return f"{PROJECT}_{service}_1"


def wait_healthy(timeout: float = UP_TIMEOUT_S) -> None:
    """Every long-running container of the project healthy (the receiver has no check)."""
    deadline = time.monotonic() + timeout
    while True:
        rows = lines(["ps", "--filter", LABEL, "--format", "{{.Names}} {{.Status}}"])
        waiting = [r for r in rows if "(healthy)" not in r and "receiver" not in r]
        if rows and not waiting:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"not healthy after {timeout:.0f} s: {waiting or 'no containers'}")
        time.sleep(2)


def down(compose: Compose) -> None:
    """compose down with the volumes; podman directly if compose cannot (nothing is left)."""
    try:
        compose("down", "-v", "--remove-orphans", timeout=300)
        return
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"compose-check: {e}; removing the project with podman", file=sys.stderr)
    ids = lines(["ps", "-aq", "--filter", LABEL])
    if ids:
        lines(["rm", "-f", *ids])
    for kind in ("volume", "network"):
        names = [n for n in lines([kind, "ls", "-q"]) if n.startswith(PROJECT + "_")]
        if names:
            lines([kind, "rm", *names])


def _keep_logs(work: Path) -> None:
    """Every container's log and compose's own, kept where a failed run can be read."""
    keep = ROOT / "tests" / "artifacts" / "compose-check"
    keep.mkdir(parents=True, exist_ok=True)
    for name in lines(["ps", "-a", "--filter", LABEL, "--format", "{{.Names}}"]):
        with open(keep / f"{name}.log", "w") as out:
            subprocess.run([exe("podman"), "logs", name], stdout=out, stderr=out, check=False)  # nosec B603
    if (work / "compose.log").exists():
        (keep / "compose.log").write_text((work / "compose.log").read_text())
    print(f"compose-check: logs in {keep}", file=sys.stderr)


def prepare(work: Path) -> None:
    """The settings, the partner's certificate and endpoint, the override file."""
    settings.write(work / ".env", settings.fresh(IMAGES))
    certs.write(work, RECEIVER_IP)
    (work / "receiver.py").write_text((Path(__file__).parent / "receiver.py").read_text())
    override = OVERRIDE.format(subnet=PARTNER_SUBNET, work=work, port=RECEIVER_PORT, ip=RECEIVER_IP)
    (work / "override.yaml").write_text(override)


def check(work: Path) -> None:
    started = time.monotonic()
    with Socket(work) as socket:
        ticker = HealthTicker()
        ticker.start()
        compose = Compose(work, socket)
        try:
            compose("up", "-d", "--no-build")
            wait_healthy()
            print(f"compose-check: up and healthy in {time.monotonic() - started:.0f} s")
            kill = [exe("podman"), "kill", "--signal", "KILL", compose.container("ledger")]
            restart = [exe("podman"), "start", compose.container("ledger")]
            endpoint = f"https://{RECEIVER_IP}:{RECEIVER_PORT}/hook"
            asyncio.run(run_partner(work, endpoint, kill, restart))
        except BaseException:
            _keep_logs(work)
            raise
        finally:
            ticker.stopping.set()
            down(compose)
    print(f"compose-check: passed in {time.monotonic() - started:.0f} s")


def main() -> int:
    ensure_podman()
    missing = missing_images(IMAGES.values())
    if missing:
        print(f"compose-check: no image {', '.join(missing)}: run `make image`", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="sluice-compose-check-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)  # the receiver (root in its container) writes here
        prepare(work)
        check(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
