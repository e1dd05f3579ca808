"""``make image``: Sluice's image and the stores' images, built here without a registry.

The Dockerfile is the production build; its base images are build arguments
(``PYTHON_IMAGE``, ``UV_IMAGE``) naming the registry's by default. Where no registry answers
(this machine), the bases are made from Debian's packages instead: a bookworm root file system
per base (``debootstrap --variant=minbase``) imported into podman's local storage. The same is
done for what compose.yaml runs beside the services: Apache Kafka on a JRE with the jars
tools.stack.kafka fetches from Maven Central, PostgreSQL and Valkey from Debian, each with the
official image's entry point conventions (``tools/image/<store>/``) so compose.yaml runs them
unchanged through its ``*_IMAGE`` variables. Nothing here is in the product image but what
the Dockerfile copies (libs/ and services/); the size of each image is printed.

``python -m tools.image build [--rebuild]``; ``python -m tools.image env`` prints the
``*_IMAGE`` settings compose.yaml takes for the local images.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess  # the tools start local processes  # nosec B404
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker

from tools.image.podman import ensure_podman, exe, image_exists, image_size, podman
from tools.stack import kafka

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MIRROR = os.environ.get("SLUICE_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SUITE = "bookworm"


@dataclass(frozen=True)
class Base:
    """A base image made from a Debian root file system with these packages."""

    name: str
    packages: tuple[str, ...]
    env: tuple[str, ...] = ()
    #: installed from bookworm-backports once the root file system is made
    backports: tuple[str, ...] = ()


PYTHON = Base(
    "localhost/sluice-python:3.11-bookworm",
    ("python3.11", "python-is-python3", "ca-certificates", "tini"),
    # uv reads SSL_CERT_FILE; the machine's own certificate authorities are in the bundle.
    ("SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",),
)
JRE = Base("localhost/sluice-jre:17-bookworm", ("openjdk-17-jre-headless", "ca-certificates"))
POSTGRES_BASE = Base("localhost/sluice-postgres-base:bookworm", ("postgresql",))
# Valkey 8 from bookworm-backports: bookworm's own redis-server (7.0) does not know the ACL
# rules common.valkey_acl writes (client|setinfo came with 7.2).
VALKEY_BASE = Base(
    "localhost/sluice-valkey-base:bookworm", ("ca-certificates",), backports=("valkey-server", "valkey-tools")
)

#: What compose.yaml is given (its variables) to run the local images.
IMAGES = {
    "SLUICE_IMAGE": "localhost/sluice:latest",
    "KAFKA_IMAGE": f"localhost/sluice-kafka:{kafka.KAFKA_VERSION}",
    "POSTGRES_IMAGE": "localhost/sluice-postgres:15-bookworm",
    "REDIS_IMAGE": "localhost/sluice-valkey:8-bookworm",
}
UV_IMAGE = "localhost/sluice-uv:local"


def _run(cmd: list[str], **kwargs: object) -> None:
    subprocess.run(cmd, check=True, **kwargs)  # type: ignore[call-overload]  # nosec B603


def build_base(base: Base, rebuild: bool) -> None:
    """debootstrap a minimal bookworm with the packages, then import it as the image."""
    if image_exists(base.name) and not rebuild:
        return
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sluice-rootfs-") as tmp:
        rootfs = Path(tmp, "rootfs")
        cmd = [exe("debootstrap"), "--variant=minbase", f"--include={','.join(base.packages)}"]
        _run([*cmd, SUITE, str(rootfs), MIRROR], stdout=subprocess.DEVNULL)
        _trust_local_authorities(rootfs)
        _install_backports(rootfs, base.backports)
        _slim(rootfs)
        changes: list[str] = []
        for env in base.env:
            changes += ["--change", f"ENV {env}"]
        tar = subprocess.Popen([exe("tar"), "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)  # nosec B603
        _run([exe("podman"), "import", *changes, "-", base.name], stdin=tar.stdout, stdout=subprocess.DEVNULL)
        tar.wait()
    print(f"  {base.name}: debootstrap {SUITE} in {time.monotonic() - started:.0f} s")


def _trust_local_authorities(rootfs: Path) -> None:
    """The machine's own certificate authorities (a TLS-inspecting egress proxy's, say).

    Only the Debian-built stand-ins get them, so that the build stage reaches PyPI from where
    the machine does; the registry's bases never do.
    """
    local = Path("/usr/local/share/ca-certificates")
    crts = list(local.glob("*.crt")) if local.is_dir() else []
    if not crts or not (rootfs / "usr/sbin/update-ca-certificates").exists():
        return
    for crt in crts:
        shutil.copy(crt, rootfs / "usr/local/share/ca-certificates" / crt.name)
    _run([exe("chroot"), str(rootfs), "update-ca-certificates"], stdout=subprocess.DEVNULL)


def _install_backports(rootfs: Path, packages: tuple[str, ...]) -> None:
    """apt-get in the root file system, bookworm-backports enabled; no service started."""
    if not packages:
        return
    sources = rootfs / "etc/apt/sources.list.d/backports.list"
    sources.write_text(f"deb {MIRROR} {SUITE}-backports main\n")
    no_start = rootfs / "usr/sbin/policy-rc.d"
    no_start.write_text("#!/bin/sh\nexit 101\n")
    no_start.chmod(0o755)
    apt = [exe("chroot"), str(rootfs), "apt-get", "-q", "-y"]
    try:
        _run([*apt, "update"], stdout=subprocess.DEVNULL)
        install = ["install", "--no-install-recommends", "-t", f"{SUITE}-backports", *packages]
        _run(
            [*apt, *install],
            stdout=subprocess.DEVNULL,
            env={"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        )
    finally:
        no_start.unlink()


def _slim(rootfs: Path) -> None:
    """No package archives, indexes or default database cluster in the image."""
    for sub in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for entry in (rootfs / sub).glob("*"):
            if entry.is_file():
                entry.unlink()
    for cluster in ("var/lib/postgresql", "etc/postgresql"):
        for version in (rootfs / cluster).glob("*"):
            shutil.rmtree(version / "main", ignore_errors=True)


def build_uv() -> None:
    """The uv binary this machine runs, as the image the Dockerfile copies /uv from."""
    uv = shutil.which("uv") or str(Path.home() / ".local/bin/uv")
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(uv, Path(tmp, "uv"))
        Path(tmp, "Containerfile").write_text("FROM scratch\nCOPY uv /uv\n")
        podman(["build", "-q", "-t", UV_IMAGE, tmp])


def build_kafka() -> None:
    """The broker on the JRE base: the cached jars plus kafka-tools (the health check's)."""
    libs = kafka.fetch()
    with tempfile.TemporaryDirectory() as tmp:
        ctx = Path(tmp)
        shutil.copytree(HERE / "kafka", ctx, dirs_exist_ok=True)
        shutil.copytree(libs, ctx / "libs")
        tools_jar = f"org.apache.kafka:kafka-tools:{kafka.KAFKA_VERSION}"
        mvn = [str(shutil.which("mvn")), "-B", "-q", "dependency:copy", f"-Dartifact={tools_jar}"]
        _run([*mvn, f"-DoutputDirectory={ctx / 'libs'}"], cwd=tmp, stdout=subprocess.DEVNULL)
        args = ["--build-arg", f"JRE_IMAGE={JRE.name}"]
        podman(["build", "--format", "docker", *args, "-t", IMAGES["KAFKA_IMAGE"], str(ctx)])


def build_store(folder: str, base: Base, tag: str) -> None:
    args = ["--build-arg", f"BASE_IMAGE={base.name}"]
    podman(["build", "--format", "docker", *args, "-t", tag, str(HERE / folder)])


def build_sluice() -> None:
    """The Dockerfile as it is, the Debian-built bases given as its build arguments. Without
    buildah's layer cache: buildah 1.28 keys the ``uv sync`` step on its text, not on the
    uv.lock it bind-mounts, so a changed lock reused the old dependencies (seen: a new
    dependency missing from the image; BuildKit keys on the mounted files). uv's own cache
    mount keeps the rebuild short."""
    args = ["--build-arg", f"PYTHON_IMAGE={PYTHON.name}", "--build-arg", f"UV_IMAGE={UV_IMAGE}"]
    podman(["build", "--no-cache", "--format", "docker", *args, "-t", IMAGES["SLUICE_IMAGE"], str(ROOT)])


def locked_runtime() -> set[str]:
    """``name==version`` of every runtime dependency uv.lock pins (no dev group)."""
    uv = shutil.which("uv") or str(Path.home() / ".local/bin/uv")
    out = subprocess.run(  # our own tool, argv list  # nosec B603
        [uv, "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    pins = set()
    for line in out.splitlines():
        requirement, _, marker = line.partition(";")
        if "==" not in requirement or line.startswith("#"):
            continue
        if marker.strip() and not Marker(marker.strip()).evaluate():  # e.g. Windows only
            continue
        pins.add(_normal(requirement))
    return pins


def _normal(requirement: str) -> str:
    name, _, version = requirement.partition("==")
    return f"{name.strip().lower().replace('_', '-').replace('.', '-')}=={version.strip()}"


#: Every distribution installed in the image, ``name==version``.
_INSTALLED = (
    "import importlib.metadata as m;"
    "print(*sorted({d.metadata['Name'] + '==' + d.version for d in m.distributions()}), sep='\\n')"
)


def verify_sluice() -> None:
    """The built image holds the product only (no tools code, no development command) and
    every runtime dependency at the version uv.lock pins."""
    tag = IMAGES["SLUICE_IMAGE"]
    found = podman(["run", "--rm", "--entrypoint", "python", tag, "-c", _PROBE]).split()
    if found:
        raise SystemExit(f"make image: {tag} holds tooling: {found}")
    installed = {
        _normal(line)
        for line in podman(["run", "--rm", "--entrypoint", "python", tag, "-c", _INSTALLED]).split()
    }
    missing = sorted(locked_runtime() - installed)
    if missing:
        raise SystemExit(f"make image: {tag} lacks what uv.lock pins: {', '.join(missing)}")
    usage = podman(["run", "--rm", tag, "--help"])
    for command in ("run", "bench", "chaos"):
        if f"{{{command}," in usage or f",{command}," in usage or f",{command}}}" in usage:
            raise SystemExit(f"make image: {tag}'s command line offers {command}")


#: What the product image must not hold: the tools package or any module of it.
_PROBE = (
    "import importlib.util, pathlib;"
    "print(*[str(p) for p in pathlib.Path('/app').rglob('tools') if p.is_dir()],"
    " 'tools-importable' if importlib.util.find_spec('tools') else '')"
)


def build(rebuild: bool) -> None:
    started = time.monotonic()
    ensure_podman()
    for base in (PYTHON, JRE, POSTGRES_BASE, VALKEY_BASE):
        build_base(base, rebuild)
    build_uv()
    build_sluice()
    verify_sluice()
    build_kafka()
    build_store("postgres", POSTGRES_BASE, IMAGES["POSTGRES_IMAGE"])
    build_store("valkey", VALKEY_BASE, IMAGES["REDIS_IMAGE"])
    for variable, tag in IMAGES.items():
        print(f"{variable}={tag}  ({image_size(tag) / 1e6:.0f} MB)")
    print(f"make image: {time.monotonic() - started:.0f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.image", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build").add_argument("--rebuild", action="store_true", help="bases too")
    sub.add_parser("env", help="the *_IMAGE settings for compose.yaml")
    args = parser.parse_args(argv)
    if args.command == "env":
        print("\n".join(f"{k}={v}" for k, v in IMAGES.items()))
        return 0
    build(args.rebuild)
    return 0


if __name__ == "__main__":
    sys.exit(main())
