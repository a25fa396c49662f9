"""Self-signed certificates for the HTTPS upstreams in tests, made fresh in each run.

An HTTPS upstream needs a certificate; committing one would put key material in the repo and
let it expire. The proxy reaches it with `ssl_insecure` (tests only). Shared by the proxy's and
the worker's test upstreams so both make their certificates the same way.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def write_self_signed(directory: Path, hosts: list[str]) -> tuple[Path, Path]:
    """Write cert.pem and key.pem valid for `hosts` (names or IPs); return their paths."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    alternative_names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            alternative_names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alternative_names.append(x509.DNSName(host))
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName(alternative_names), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path = directory / "cert.pem"
    key_path = directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path
