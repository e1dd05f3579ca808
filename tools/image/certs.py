"""A certificate authority of the check's own and a server certificate for an IP address.

``make compose-check``'s partner endpoint serves HTTPS with it; only the webhooks container
is given the authority (SSL_CERT_FILE), so production's https rule for webhook targets stays on.
Both live for one check in its temporary directory.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def write(work: Path, ip: str) -> None:
    """ca.pem, receiver.pem and receiver.key in ``work``."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("sluice compose-check CA"))
        .issuer_name(_name("sluice compose-check CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))])
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name(ip))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(san, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    (work / "ca.pem").write_bytes(ca.public_bytes(pem))
    (work / "receiver.pem").write_bytes(leaf.public_bytes(pem))
    (work / "receiver.key").touch(mode=0o600)
    (work / "receiver.key").write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
