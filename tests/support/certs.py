"""Certificates for the HTTPS upstreams in tests, made fresh in each run.

An HTTPS upstream needs a certificate; committing one would put key material in the repo and
let it expire. A self-signed one is reached with `ssl_insecure` (tests only); one signed by a
private CA is what `--upstream-ca` is for. Shared by the proxy's and the worker's test upstreams
so both make their certificates the same way.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _names(hosts: list[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def _builder(subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey):
    """A certificate for `key`'s public half, valid from yesterday until the day after tomorrow."""
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
    )


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def _write_certificate(path: Path, certificate: x509.Certificate) -> Path:
    path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return path


def _common_name(name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])


def write_self_signed(directory: Path, hosts: list[str]) -> tuple[Path, Path]:
    """Write cert.pem and key.pem valid for `hosts` (names or IPs); return their paths."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = _common_name(hosts[0])
    certificate = (
        _builder(name, name, key)
        .add_extension(x509.SubjectAlternativeName(_names(hosts)), critical=False)
        .sign(key, hashes.SHA256())
    )
    return (
        _write_certificate(directory / "cert.pem", certificate),
        _write_key(directory / "key.pem", key),
    )


def write_private_ca(directory: Path, hosts: list[str]) -> tuple[Path, Path, Path]:
    """A private CA and a server certificate it signs for `hosts`: (ca.pem, cert.pem, key.pem).

    Like an internal tool server's or a staging API's: no public root vouches for it, so only a
    client told to trust ca.pem can verify the server.
    """
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _common_name("Groundhog test private CA")
    ca_usage = x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=True,
        encipher_only=False,
        decipher_only=False,
    )
    ca_cert = (
        _builder(ca_name, ca_name, ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(ca_usage, critical=True)
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (
        _builder(_common_name(hosts[0]), ca_name, key)
        .add_extension(x509.SubjectAlternativeName(_names(hosts)), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return (
        _write_certificate(directory / "private-ca.pem", ca_cert),
        _write_certificate(directory / "server-cert.pem", certificate),
        _write_key(directory / "server-key.pem", key),
    )
