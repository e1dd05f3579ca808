"""kube-apiserver without a cluster: one pinned release built from the Go module proxy, run on
the etcd :mod:`tools.stack.etcd` builds, for ``kubectl apply --dry-run=server``.

``build()`` builds ``k8s.io/kubernetes/cmd/kube-apiserver`` at KUBERNETES_VERSION into
``~/.cache/sluice/kube-apiserver-<version>`` once, as :mod:`tools.stack.etcd` builds etcd:
``go install module@version`` refuses k8s.io/kubernetes for its replace directives (they point
its staging modules, k8s.io/api and the rest, at ./staging), so a throw-away wrapper module
requires it and replaces each staging module with its own release (v0.<minor>.<patch>, which
the proxy serves). A lock keeps parallel builds apart; the binary is renamed into place only
when the build succeeded. ``SLUICE_KUBE_APISERVER`` may name another binary, ``SLUICE_GO``
another ``go``.

:class:`ApiServer` is the server in a process of its own, on a certificate authority of its own
(serving certificate for 127.0.0.1, a ``system:masters`` client certificate for kubectl, the
service-account key pair it needs to start) and Pod Security admission defaulting every mode
(enforce, audit, warn) to ``restricted``: a workload that a restricted namespace would refuse
its pods is refused (a Pod) or warned about (a Deployment, a Job), never let through.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import ipaddress
import json
import os
import re
import subprocess  # the tools start local processes  # nosec B404
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from tools.stack.etcd import cache_dir as etcd_cache_dir
from tools.stack.etcd import go
from tools.stack.processes import die_with_parent, free_port

KUBERNETES_VERSION = "1.37.2"
KUBERNETES_MODULE = "k8s.io/kubernetes"
STAGING_VERSION = "v0." + KUBERNETES_VERSION.split(".", 1)[1]  # k8s.io/api v0.37.2 for 1.37.2
PACKAGE = f"{KUBERNETES_MODULE}/cmd/kube-apiserver"
# The release stamped as Kubernetes' own build stamps it (what /version and --version say);
# without it the binary calls itself v0.0.0-master.
_STAMP = "k8s.io/component-base/version"
_MAJOR, _MINOR = KUBERNETES_VERSION.split(".")[:2]
LDFLAGS = (
    f"-s -w -X {_STAMP}.gitVersion=v{KUBERNETES_VERSION} -X {_STAMP}.gitMajor={_MAJOR}"
    f" -X {_STAMP}.gitMinor={_MINOR} -X {_STAMP}.gitTreeState=clean"
)
KUBECTL = os.environ.get("SLUICE_KUBECTL", "kubectl")


class ApiServerUnavailable(RuntimeError):
    """No Go toolchain here, the build failed or the server did not come up: says which."""


def binary() -> Path:
    """Where the ``kube-apiserver`` binary is (or will be once built)."""
    if os.environ.get("SLUICE_KUBE_APISERVER"):
        return Path(os.environ["SLUICE_KUBE_APISERVER"])
    return etcd_cache_dir().parent / f"kube-apiserver-{KUBERNETES_VERSION}" / "kube-apiserver"


def _lowest_priority() -> None:
    os.nice(19)


def _go(toolchain: str, args: list[str], cwd: Path) -> str:
    # At the lowest priority on at most two cores: the machine is shared, and the build is
    # half an hour's CPU, once per release.
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod", "GOMAXPROCS": "2"}
    done = subprocess.run(  # nosec B603
        [toolchain, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=_lowest_priority,
    )
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
        raise ApiServerUnavailable(
            f"go {args[0]} failed for kube-apiserver {KUBERNETES_VERSION}: {' | '.join(tail)}"
        )
    return done.stdout


def wrapper_go_mod(kubernetes_go_mod: str) -> str:
    """The wrapper module: k8s.io/kubernetes required, each module its go.mod replaces with
    ./staging/... replaced with that module's own release instead."""
    staging = re.findall(r"^\s*(k8s\.io/[\w.-]+)\s*=>\s*\./staging/", kubernetes_go_mod, re.MULTILINE)
    if not staging:
        raise ApiServerUnavailable(
            f"{KUBERNETES_MODULE} v{KUBERNETES_VERSION}: no staging replaces in its go.mod"
        )
    replaces = "".join(f"\t{m} => {m} {STAGING_VERSION}\n" for m in staging)
    return (
        "module sluice.devstack/kubeapiserver\n\ngo 1.26.0\n\n"
        f"require {KUBERNETES_MODULE} v{KUBERNETES_VERSION}\n\nreplace (\n{replaces})\n"
    )


def build() -> Path:
    """The ``kube-apiserver`` binary, built once into the cache (tens of minutes of CPU on two
    cores)."""
    target = binary()
    if target.exists():
        return target
    toolchain = go()
    if toolchain is None:
        raise ApiServerUnavailable(
            f"no go on PATH (or SLUICE_GO) to build kube-apiserver {KUBERNETES_VERSION}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():
            return target
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            work = Path(tmp)
            info = json.loads(
                _go(
                    toolchain,
                    ["mod", "download", "-json", f"{KUBERNETES_MODULE}@v{KUBERNETES_VERSION}"],
                    work,
                )
            )
            (work / "go.mod").write_text(wrapper_go_mod(Path(info["GoMod"]).read_text()))
            _go(toolchain, ["get", f"{PACKAGE}@v{KUBERNETES_VERSION}"], work)
            _go(
                toolchain,
                [
                    "build",
                    "-p",
                    "2",
                    "-trimpath",
                    "-ldflags=" + LDFLAGS,
                    "-o",
                    str(work / "kube-apiserver"),
                    PACKAGE,
                ],
                work,
            )
            (work / "kube-apiserver").rename(target)
    return target


def _name(common: str, organization: str = "") -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if organization:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attrs)


def _pem_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _issue(
    ca: x509.Certificate | None,
    ca_key: ec.EllipticCurvePrivateKey,
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.subject if ca else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    if ca is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
    else:
        san = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def write_certs(work: Path) -> None:
    """ca.pem; server.pem/.key (127.0.0.1); client.pem/.key (system:masters, kubectl's);
    sa.key and sa.pub (the service-account token signing pair the server insists on)."""
    pem = serialization.Encoding.PEM
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _issue(None, ca_key, _name("sluice dry-run CA"), ca_key)
    (work / "ca.pem").write_bytes(ca.public_bytes(pem))
    for name, subject in (
        ("server", _name("127.0.0.1")),
        ("client", _name("sluice-dry-run", "system:masters")),
    ):
        key = ec.generate_private_key(ec.SECP256R1())
        (work / f"{name}.pem").write_bytes(_issue(ca, ca_key, subject, key).public_bytes(pem))
        (work / f"{name}.key").touch(mode=0o600)
        (work / f"{name}.key").write_bytes(_pem_key(key))
    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (work / "sa.key").touch(mode=0o600)
    (work / "sa.key").write_bytes(_pem_key(sa))
    (work / "sa.pub").write_bytes(
        sa.public_key().public_bytes(pem, serialization.PublicFormat.SubjectPublicKeyInfo)
    )


ADMISSION = """\
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: PodSecurity
    configuration:
      apiVersion: pod-security.admission.config.k8s.io/v1
      kind: PodSecurityConfiguration
      defaults: {enforce: restricted, enforce-version: latest, audit: restricted, audit-version: latest,
                 warn: restricted, warn-version: latest}
      exemptions: {usernames: [], runtimeClasses: [], namespaces: []}
"""


@dataclass
class ApiServer:
    """kube-apiserver on ``etcd_url``, its files in ``work``."""

    work: Path
    etcd_url: str
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def kubeconfig(self) -> Path:
        return self.work / "kubeconfig"

    @property
    def log_file(self) -> Path:
        return self.work / "kube-apiserver.log"

    def argv(self) -> list[str]:
        w = self.work
        return [
            str(binary()),
            *(
                "--etcd-servers",
                self.etcd_url,
                "--bind-address",
                "127.0.0.1",
                "--secure-port",
                str(self.port),
            ),
            *("--tls-cert-file", str(w / "server.pem"), "--tls-private-key-file", str(w / "server.key")),
            *("--client-ca-file", str(w / "ca.pem"), "--authorization-mode", "RBAC"),
            *("--service-account-issuer", "https://kubernetes.default.svc.cluster.local"),
            *(
                "--service-account-key-file",
                str(w / "sa.pub"),
                "--service-account-signing-key-file",
                str(w / "sa.key"),
            ),
            *(
                "--service-cluster-ip-range",
                "10.96.0.0/16",
                "--admission-control-config-file",
                str(w / "admission.yaml"),
            ),
            # A dry run's server: no flow control tuning, no profiling, no audit log.
            *("--enable-priority-and-fairness=false", "--profiling=false", "--v=1"),
        ]

    def _write_kubeconfig(self) -> None:
        w = self.work
        self.kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {
                            "name": "dry-run",
                            "cluster": {
                                "server": f"https://127.0.0.1:{self.port}",
                                "certificate-authority": str(w / "ca.pem"),
                            },
                        }
                    ],
                    "users": [
                        {
                            "name": "admin",
                            "user": {
                                "client-certificate": str(w / "client.pem"),
                                "client-key": str(w / "client.key"),
                            },
                        }
                    ],
                    "contexts": [{"name": "dry-run", "context": {"cluster": "dry-run", "user": "admin"}}],
                    "current-context": "dry-run",
                }
            )
        )

    def start(self) -> ApiServer:
        self.work.mkdir(parents=True, exist_ok=True)
        write_certs(self.work)
        (self.work / "admission.yaml").write_text(ADMISSION)
        self._write_kubeconfig()
        log = self.log_file.open("ab")
        self.proc = subprocess.Popen(  # a local binary, argv list, no shell  # nosec B603
            self.argv(),
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
            env={**os.environ, "GOMAXPROCS": "2"},
        )
        log.close()
        return self

    def kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # nosec B603
            [KUBECTL, "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
        )

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise ApiServerUnavailable(f"kube-apiserver exited {self.proc.returncode}: {self._tail()}")
            if self.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok":
                return
            time.sleep(0.5)
        raise ApiServerUnavailable(f"kube-apiserver not ready within {timeout:.0f} s: {self._tail()}")

    def _tail(self) -> str:
        with contextlib.suppress(OSError):
            return " | ".join(self.log_file.read_text(errors="replace").strip().splitlines()[-5:])
        return ""

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
