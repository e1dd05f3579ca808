"""``make test-containers``: the integration suite with its stores started by testcontainers.

The path a CI machine with Docker takes (tools.stack.stores: a container per store when a
Docker engine answers), taken here through podman's Docker-compatible socket with the images
``make image`` built: PostgreSQL, Valkey and Apache Kafka as containers, the services as
processes as usual. Ryuk (testcontainers' reaper) is off: its image is in no registry this
machine reaches, and every store container is stopped by the fixtures that started it.
Arguments are pytest's (default: the integration and in-process tiers, two workers).
"""

from __future__ import annotations

import os
import subprocess  # the tools start local processes  # nosec B404
import sys
import tempfile
import time
from pathlib import Path

from tools.image.__main__ import IMAGES, ROOT
from tools.image.podman import Socket, ensure_podman, missing_images

DEFAULT_ARGS = ["-n", "2", "--dist", "loadfile", "--no-loadscope-reorder"]
DEFAULT_ARGS += ["tests/integration", "tests/inprocess"]


def main(argv: list[str]) -> int:
    ensure_podman()
    missing = missing_images(IMAGES.values())
    if missing:
        print(f"test-containers: no image {', '.join(missing)}: run `make image`", file=sys.stderr)
        return 2
    started = time.monotonic()
    temporary = tempfile.TemporaryDirectory(prefix="sluice-test-containers-")
    with temporary as tmp, Socket(Path(tmp)) as socket:
        env = {
            **os.environ,
            **IMAGES,
            "DOCKER_HOST": socket.url,
            "SLUICE_USE_CONTAINERS": "1",
            "TESTCONTAINERS_RYUK_DISABLED": "true",
            # published ports on this host (the sandbox looks like a container to testcontainers,
            # which would then aim at the bridge gateway)
            "TESTCONTAINERS_CONNECTION_MODE": "docker_host",
        }
        cmd = [sys.executable, "-m", "pytest", *(argv or DEFAULT_ARGS)]
        code = subprocess.run(cmd, env=env, cwd=ROOT, check=False).returncode  # nosec B603
    print(f"test-containers: exit {code} in {time.monotonic() - started:.0f} s")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
